"""The optional files of ``y9 predict``: YOLO-format label files, crops per class and COCO result rows.

    files = PredictionFiles("out", SaveOptions(txt=True, conf=True, crop=True, coco_json=True))
    files.add("photos/a.jpg", None, frame, dets)     # after each frame
    files.close()                                    # writes out/predictions_coco.json

- ``--save-txt``: ``labels/<stem>.txt`` per image (``labels/<stem>_<frame>.txt`` per video frame), one line per
  detection ``class cx cy w h`` normalised to the frame's width and height (the YOLO label format, 7 decimals), with
  ``--save-conf`` a sixth column, the confidence. Written as each frame is done; a frame without detections gets an
  empty file (it was processed).
- ``--save-crop``: ``crops/<class name>/<stem>_<k>.jpg``: the pixels of detection k of the frame, the box rounded
  outwards to whole pixels (``crop_box``) and clipped to the frame.
- ``--save-json``: ``predictions_coco.json``, the COCO results format (``Detections.to_coco``): a list of
  ``{"image_id", "category_id", "bbox": [x, y, w, h], "score"}`` in frame pixels; category id: COCO's 91-class id
  for a model whose classes are the 80 COCO classes (what COCO tools expect), else the class id
  (``y9core.evaluation.coco_categories.category_ids_for``). The image
  id is the file stem as an int when it is a number (COCO's own file names: 000000000139.jpg -> 139), else the
  stem (``<stem>_<frame>`` for video frames). Written at the end, also after a Ctrl-C.

Two sources with the same stem (photos/a/x.jpg, photos/b/x.jpg) get ``x`` and ``x_1``, in the order they are read.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from y9core.evaluation.coco_categories import category_ids_for
from y9core.evaluation.coco_results import coco_image_id
from y9core.files.atomic_write import atomic_write

LABELS_DIR, CROPS_DIR, COCO_JSON_NAME = "labels", "crops", "predictions_coco.json"
_UNSAFE = re.compile(r"[^\w .()+-]+")


@dataclass(frozen=True)
class SaveOptions:
    """Which optional files ``predict_source`` writes (all off by default)."""

    txt: bool = False  # labels/*.txt in the YOLO format
    conf: bool = False  # a confidence column in those files
    crop: bool = False  # crops/<class>/*.jpg
    coco_json: bool = False  # predictions_coco.json

    def __post_init__(self) -> None:
        if self.conf and not self.txt:
            raise ValueError("--save-conf adds a confidence column to the --save-txt files; expected --save-txt with it.")

    @property
    def any(self) -> bool:
        return self.txt or self.crop or self.coco_json


def yolo_lines(dets: Any, frame_hw: tuple[int, int], *, conf: bool = False) -> list[str]:
    """One ``class cx cy w h [conf]`` line per detection, normalised to the frame (h, w)."""
    h, w = frame_hw
    xyxy = dets.xyxy.astype(np.float64)
    cx, cy = (xyxy[:, 0] + xyxy[:, 2]) / 2 / w, (xyxy[:, 1] + xyxy[:, 3]) / 2 / h
    bw, bh = (xyxy[:, 2] - xyxy[:, 0]) / w, (xyxy[:, 3] - xyxy[:, 1]) / h
    lines = []
    for i in range(len(dets)):
        line = f"{int(dets.class_id[i])} {cx[i]:.7f} {cy[i]:.7f} {bw[i]:.7f} {bh[i]:.7f}"
        lines.append(line + (f" {float(dets.confidence[i]):.5f}" if conf else ""))
    return lines


def crop_box(box: Any, frame_hw: tuple[int, int]) -> tuple[int, int, int, int]:
    """Whole-pixel bounds ``(x1, y1, x2, y2)`` of a box: rounded outwards, clipped to the frame (h, w)."""
    h, w = frame_hw
    x1, y1 = max(0, math.floor(float(box[0]))), max(0, math.floor(float(box[1])))
    x2, y2 = min(w, math.ceil(float(box[2]))), min(h, math.ceil(float(box[3])))
    return x1, y1, x2, y2


def folder_name(class_name: str) -> str:
    """A class name as a folder name (characters a file system may refuse become "_")."""
    safe = _UNSAFE.sub("_", class_name).strip(" .")
    return safe or "_"


class PredictionFiles:
    """Writes the files ``options`` asks for under ``save_dir`` (see the module docstring)."""

    def __init__(self, save_dir: str | Path, options: SaveOptions) -> None:
        self.save_dir = Path(save_dir)
        self.options = options
        self.coco_rows: list[dict[str, Any]] = []
        self._stems: dict[str, str] = {}  # source -> its unique stem
        self._taken: set[str] = set()
        self.labels_dir = self.save_dir / LABELS_DIR if options.txt else None
        self.crops_dir = self.save_dir / CROPS_DIR if options.crop else None
        self.coco_path = self.save_dir / COCO_JSON_NAME if options.coco_json else None
        for folder in (self.labels_dir, self.crops_dir):
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)

    def stem_of(self, source: str) -> str:
        """The unique stem of a source (the first one with a stem keeps it, later ones get _1, _2 ...)."""
        if source not in self._stems:
            base = Path(source.rstrip("/")).stem or "stream"
            stem, k = base, 1
            while stem in self._taken:
                stem, k = f"{base}_{k}", k + 1
            self._taken.add(stem)
            self._stems[source] = stem
        return self._stems[source]

    def add(self, source: str, frame_index: int | None, image: np.ndarray, dets: Any) -> None:
        """The files of one frame (``image``: the frame the detections belong to)."""
        stem = self.stem_of(source) + ("" if frame_index is None else f"_{frame_index}")
        hw = image.shape[:2]
        if self.labels_dir is not None:
            lines = yolo_lines(dets, hw, conf=self.options.conf)
            text = "".join(f"{line}\n" for line in lines)  # renamed into place: a planted link is replaced, not followed
            atomic_write(self.labels_dir / f"{stem}.txt", text, durable=False)
        if self.crops_dir is not None:
            for k, (box, _, cls) in enumerate(dets):
                x1, y1, x2, y2 = crop_box(box, hw)
                if x2 <= x1 or y2 <= y1:
                    continue  # a box outside the frame has no pixels
                folder = self.crops_dir / folder_name(dets.name_of(cls))
                folder.mkdir(exist_ok=True)
                cv2.imwrite(str(folder / f"{stem}_{k}.jpg"), image[y1:y2, x1:x2])
        if self.coco_path is not None:
            self.coco_rows.extend(dets.to_coco(coco_image_id(stem), category_ids_for(dets.names)))

    def discard(self) -> list[Path]:
        """End a run that wrote nothing: the folders made for it are removed when empty; returns []."""
        for folder in (self.labels_dir, self.crops_dir):
            if folder is not None and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return []

    def close(self) -> list[Path]:
        """Write the COCO results file (atomically); returns the folders and files written."""
        written = [p for p in (self.labels_dir, self.crops_dir) if p is not None]
        if self.coco_path is not None:
            from y9core.files.atomic_write import atomic_write

            atomic_write(self.coco_path, json.dumps(self.coco_rows) + "\n")
            written.append(self.coco_path)
        return written
