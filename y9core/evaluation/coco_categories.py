"""The 80 COCO detection classes and their ids in COCO's own files (91 category ids, 11 of them unused).

Models trained on COCO number the 80 classes 0-79; COCO's annotation files and its evaluators use the category ids
1-90 with gaps. ``category_ids_for(names)`` is the one rule that decides which ids a COCO results file carries
(``y9 predict --save-json``, ``y9.Result.to_coco``): COCO's ids for a model whose classes are the 80 COCO classes, in
COCO's order, else the class ids themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

COCO_NAMES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
    "scissors", "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip

#: class id (0-79) -> COCO category id (1-90), as in COCO's instances_*.json
COCO91_IDS = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
    64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
)  # fmt: skip


def is_coco80(names: Sequence[str] | Mapping[int, str]) -> bool:
    """The class names are the 80 COCO classes in COCO's order (a list, or a dict 0..79 -> name)."""
    listed = [names[k] for k in sorted(names)] if isinstance(names, Mapping) else list(names)
    if isinstance(names, Mapping) and sorted(names) != list(range(len(listed))):
        return False
    return [str(n).strip().lower() for n in listed] == list(COCO_NAMES)


def category_ids_for(names: Sequence[str] | Mapping[int, str]) -> tuple[int, ...] | None:
    """COCO's category ids (``COCO91_IDS``) for a COCO-80 model, else None (the class id is the category id)."""
    return COCO91_IDS if is_coco80(names) else None
