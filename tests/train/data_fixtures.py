"""Helpers of the tests/train/test_data_*.py files: tiny YOLO-format datasets built in a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import TEST_DATA

# two COCO images kept in the repo (tests/data/ATTRIBUTION.md), with their YOLO labels beside them
COCO_36 = TEST_DATA / "000000000036.jpg"  # 481 x 640 (w x h)
COCO_42 = TEST_DATA / "000000000042.jpg"  # 640 x 478


def add_image(root: Path, split: str, name: str, source: Path, label: str | None) -> Path:
    """Copy ``source`` to ``root/images/split/name`` and write its label text (None: no label file)."""
    img_dir, lab_dir = root / "images" / split, root / "labels" / split
    img_dir.mkdir(parents=True, exist_ok=True)
    lab_dir.mkdir(parents=True, exist_ok=True)
    dst = img_dir / name
    shutil.copyfile(source, dst)
    if label is not None:
        (lab_dir / Path(name).with_suffix(".txt")).write_text(label)
    return dst


def write_yaml(root: Path, nc: int = 80, **extra) -> Path:
    data = {"path": ".", "train": "images/train", "val": "images/val", "nc": nc, **extra}
    path = root / "data.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def coco_pair_dataset(root: Path) -> Path:
    """train: both test images with their labels plus a background copy; val: one image. Returns data.yaml."""
    add_image(root, "train", "a.jpg", COCO_36, (TEST_DATA / "000000000036.txt").read_text())
    add_image(root, "train", "b.jpg", COCO_42, (TEST_DATA / "000000000042.txt").read_text())
    add_image(root, "train", "bg.jpg", COCO_42, None)
    add_image(root, "val", "c.jpg", COCO_36, (TEST_DATA / "000000000036.txt").read_text())
    return write_yaml(root)
