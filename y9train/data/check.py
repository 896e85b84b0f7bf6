"""Dataset statistics for ``y9 data check``: counts, class histogram, box sizes (COCO small/medium/large)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from y9core.data.dataset_warnings import dataset_warnings
from y9core.data.labels import LabelSet, load_labels
from y9core.data.paths import label_path_for
from y9core.data.yaml_config import load_data_yaml

# COCO area ranges, in pixels of the original image: small < 32^2 <= medium < 96^2 <= large
SMALL_MAX, MEDIUM_MAX = 32**2, 96**2
# box-size histogram bins on sqrt(area) in original pixels
SIZE_EDGES = (0, 8, 16, 32, 64, 96, 128, 256, 512, float("inf"))


@dataclass
class SplitStats:
    """Statistics of one split.

    Attributes:
        images: usable images; label_files: images having a label file; backgrounds: images without boxes;
        boxes: box count; skipped: ``(path, reason)`` of unusable images and non-image list entries;
        issues: ``file:line: what was done`` of label lines fixed or dropped; issue_counts: per kind;
        layout_warning: the sentence when no image has a label file (a split other than train);
        class_counts: boxes per class (index = class id); small/medium/large: COCO area split;
        size_hist: ``(lo, hi, count)`` of sqrt(box area) in original pixels, bins ``SIZE_EDGES``.
    """

    split: str
    images: int
    label_files: int
    backgrounds: int
    boxes: int
    class_counts: list[int]
    small: int
    medium: int
    large: int
    size_hist: list[tuple[float, float, int]]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    issue_counts: dict[str, int] = field(default_factory=dict)
    layout_warning: str | None = None


@dataclass
class DatasetStats:
    """Statistics of every split of a data.yaml, and the dataset's warnings (near-duplicate class names, val
    sharing training images, orphan label files, EXIF-turned images)."""

    data_yaml: Path
    names: list[str]
    splits: dict[str, SplitStats]
    warnings: list[str] = field(default_factory=list)  # y9core.data.dataset_warnings: probable mistakes


def box_areas(labels: list[np.ndarray], shapes: np.ndarray) -> np.ndarray:
    """Areas in original pixels of every box: ndarray[total boxes] float64.

    Args:
        labels: per image ndarray[n, 5] normalised ``(class, cx, cy, w, h)``; shapes: ndarray[N, 2] (h, w).
    """
    parts = [lb[:, 3].astype(np.float64) * w * lb[:, 4] * h for lb, (h, w) in zip(labels, shapes) if len(lb)]
    return np.concatenate(parts) if parts else np.zeros(0)


def split_stats(
    split: str,
    images: list[Path],
    nc: int,
    *,
    cache_dir=None,
    label_cache: bool = True,
    left_out: list[tuple[Path, str]] | None = None,
) -> SplitStats:
    """Statistics of one split; the train split must hold a box (as in training); ``left_out``: entries of
    list files / folders that are not images (reported with the skipped images)."""
    ls = load_labels(images, nc, cache=label_cache, cache_dir=cache_dir, require_labels=split == "train")
    return stats_of(split, ls, nc, left_out)


def stats_of(split: str, ls: LabelSet, nc: int, left_out: list[tuple[Path, str]] | None = None) -> SplitStats:
    """Statistics of one split's ``LabelSet``."""
    areas = box_areas(ls.labels, ls.shapes)
    classes = np.concatenate([lb[:, 0] for lb in ls.labels]) if ls.labels else np.zeros(0)
    counts = np.bincount(classes.astype(np.int64), minlength=nc) if len(classes) else np.zeros(nc, np.int64)
    hist, _ = np.histogram(np.sqrt(areas), bins=np.array(SIZE_EDGES, dtype=np.float64))
    return SplitStats(
        split=split,
        images=len(ls.files),
        label_files=sum(1 for p in ls.files if label_path_for(p).is_file()),
        backgrounds=ls.backgrounds,
        boxes=ls.boxes,
        class_counts=[int(c) for c in counts],
        small=int((areas < SMALL_MAX).sum()),
        medium=int(((areas >= SMALL_MAX) & (areas < MEDIUM_MAX)).sum()),
        large=int((areas >= MEDIUM_MAX).sum()),
        size_hist=[(SIZE_EDGES[i], SIZE_EDGES[i + 1], int(c)) for i, c in enumerate(hist)],
        skipped=[(str(p), why) for p, why in [*(left_out or []), *ls.skipped]],
        issues=[str(i) for i in ls.issues],
        issue_counts=ls.issue_counts(),
        layout_warning=ls.layout_warning,
    )


def check_dataset(
    data_yaml: str | Path, *, splits: tuple[str, ...] | None = None, cache_dir=None, label_cache: bool = True
) -> DatasetStats:
    """Validate a data.yaml and every label of its splits, and count.

    Args:
        splits: which splits (default all present among train/val/test).
    Raises:
        DataError: a bad data.yaml or label line (file:line), or a train split without a single box.
    """
    cfg = load_data_yaml(data_yaml, require=tuple(splits or ("train",)))
    names = list(splits or cfg.splits)
    out, sets = {}, {}
    for s in names:
        left_out: list[tuple[Path, str]] = []
        files = cfg.image_files(s, skipped=left_out)
        sets[s] = load_labels(
            files, cfg.nc, cache=label_cache, cache_dir=cache_dir, require_labels=s == "train"
        )
        out[s] = stats_of(s, sets[s], cfg.nc, left_out)
    return DatasetStats(
        data_yaml=cfg.yaml_path, names=cfg.names, splits=out, warnings=dataset_warnings(cfg, sets)
    )
