"""Oddities of a dataset that do not stop a run but are probably mistakes: one warning sentence each, printed by
``y9 data check`` and at the start of training (docs/training.md, "Dataset warnings").

- class names that differ only in case or spaces (``Car`` and ``car ``): exactly equal names are an error already
  (``yaml_config``); these are probably one class split in two;
- a validation split that is the training split, or shares images with it: its scores then measure memory;
- orphan label files: a ``.txt`` in a labels folder of the dataset that no image of any split uses (its boxes are
  trained on by nobody; ``classes.txt``, written by labelling tools, is not counted);
- a split that names the same image more than once (a list file repeating a line): each repeat is trained on or
  scored again, and the image count overstates the data;
- images whose EXIF orientation turns or flips them. y9 reads every image as viewers show it (OpenCV applies the
  tag, in training, validation, predict and inspect alike), so labels must be drawn on the turned picture; labels
  made on the stored pixels (some tools ignore the tag) are wrong for these images.

At most ``SHOWN`` paths are named per warning; the count says how many there are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from y9core.data.labels import LabelSet
from y9core.data.paths import label_path_for
from y9core.data.yaml_config import DataConfig
from y9core.shorten import quoted

SHOWN = 3
TOOL_FILES = frozenset({"classes.txt"})  # written beside labels by labelling tools; not a label file
ORIENTATIONS = {
    2: "mirrored",
    3: "turned 180 degrees",
    4: "flipped upside down",
    5: "mirrored and turned 90 degrees",
    6: "turned 90 degrees clockwise",
    7: "mirrored and turned 90 degrees",
    8: "turned 90 degrees counter-clockwise",
}


def _some(paths: list, n: int = SHOWN) -> str:
    shown = ", ".join(str(p) for p in paths[:n])
    return shown + (f" and {len(paths) - n} more" if len(paths) > n else "")


def similar_names(cfg: DataConfig) -> list[str]:
    """Class names equal once case and spaces are ignored."""
    first: dict[str, int] = {}
    pairs = []
    for i, name in enumerate(cfg.names):
        key = " ".join(name.split()).casefold()
        if key in first:
            pairs.append(
                f"{quoted(cfg.names[first[key]])} (class {first[key]}) and {quoted(name)} (class {i})"
            )
        else:
            first[key] = i
    if not pairs:
        return []
    return [f"data.yaml {cfg.yaml_path} has class names that differ only in case or spaces: {_some(pairs)}; "
            "expected one name per class (one kind of object split over two classes is learnt as neither)."]  # fmt: skip


def shared_images(cfg: DataConfig, sets: Mapping[str, LabelSet]) -> list[str]:
    """A validation (or test) split that is, or overlaps, the training split."""
    if "train" not in sets:
        return []
    train = set(sets["train"].files)
    out = []
    for split, ls in sets.items():
        if split == "train":
            continue
        files = set(ls.files)
        shared = sorted(files & train)
        if not shared:
            continue
        what = (
            "is the training split"
            if files == train
            else f"shares {len(shared)} of its {len(files)} images with the training split (e.g. {_some(shared, 2)})"
        )
        out.append(f"data.yaml {cfg.yaml_path}: the {split} split {what}; its scores then measure how well the "
                   "model remembers training images, not how it does on new ones. Expected separate images.")  # fmt: skip
    return out


def repeated_images(cfg: DataConfig, sets: Mapping[str, LabelSet]) -> list[str]:
    """A split that names one image more than once (its count of images is not its count of distinct images)."""
    from collections import Counter

    out = []
    for split, ls in sets.items():
        counts = Counter(ls.files)
        if len(counts) == len(ls.files):
            continue
        repeated = sorted(((n, p) for p, n in counts.items() if n > 1), key=lambda t: (-t[0], str(t[1])))
        shown = _some([f"{p} ({n:,} times)" for n, p in repeated], 2)
        out.append(f"data.yaml {cfg.yaml_path}: the {split} split names {len(ls.files):,} images but only "
                   f"{len(counts):,} distinct {'one' if len(counts) == 1 else 'ones'} ({len(repeated):,} named more than once: {shown}); each repeat is "
                   "used again. Expected each image once.")  # fmt: skip
    return out


def orphan_labels(sets: Mapping[str, LabelSet]) -> list[str]:
    """Label files in the dataset's labels folders that no image uses."""
    used = {label_path_for(p) for ls in sets.values() for p in [*ls.files, *(q for q, _ in ls.skipped)]}
    folders = {p.parent for p in used}
    orphans = []
    for folder in sorted(folders):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".txt") and e.is_file())
        except OSError:
            continue
        orphans += [folder / n for n in names if n not in TOOL_FILES and folder / n not in used]
    if not orphans:
        return []
    return [f"{len(orphans)} label file(s) have no image: {_some(orphans)}; their boxes are not trained on. "
            "Expected an image for each label file (images/<split>/<name>.jpg for labels/<split>/<name>.txt)."]  # fmt: skip


def exif_turned(sets: Mapping[str, LabelSet]) -> list[str]:
    """Images whose EXIF orientation turns or flips them (module docstring)."""
    found = sorted({(p, o) for ls in sets.values() for p, o in ls.oriented})
    if not found:
        return []
    shown = [f"{p} ({ORIENTATIONS.get(o, f'orientation {o}')})" for p, o in found]
    return [f"{len(found)} image(s) carry an EXIF orientation: {_some(shown)}. y9 reads them as viewers show them "
            "(turned), so their labels must be drawn on the turned picture; labels made on the stored pixels are "
            "wrong for them (docs/training.md, 'EXIF orientation')."]  # fmt: skip


def dataset_warnings(cfg: DataConfig, sets: Mapping[str, LabelSet]) -> list[str]:
    """Every warning of the module docstring for a data.yaml and the label sets of its splits (by split name)."""
    return [*similar_names(cfg), *shared_images(cfg, sets), *repeated_images(cfg, sets), *orphan_labels(sets),
            *exif_turned(sets)]  # fmt: skip
