"""Rows of the COCO results format (what pycocotools' ``loadRes`` and COCO evaluators read), from boxes in pixels:
``{"image_id", "category_id", "bbox": [x, y, w, h], "score"}``. One rule for ``Detections.to_coco``, ``y9 predict
--save-json`` and ``y9 val --save-json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def coco_image_id(stem: str) -> int | str:
    """The COCO image id of a file stem: its number when it is one (COCO's 000000000139.jpg -> 139), else the
    stem itself."""
    return int(stem) if stem.isdigit() else stem


def coco_rows(
    xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray, image_id: int | str,
    category_ids: Sequence[int] | Mapping[int, int] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """One row per box (xyxy ndarray[N, 4] in pixels, scores ndarray[N], class_ids ndarray[N]).

    Args:
        category_ids: class id -> category id (a list indexed by class id, or a dict); None: the class id.
    Raises:
        ValueError: a class id that ``category_ids`` does not cover.
    """
    cats = [int(c) for c in np.asarray(class_ids).reshape(-1)]
    if category_ids is not None:
        table = dict(category_ids) if isinstance(category_ids, Mapping) else dict(enumerate(category_ids))
        missing = sorted({c for c in cats if c not in table})
        if missing:
            raise ValueError(
                f"category_ids has no entry for class id {missing[0]}; expected one category id per class id."
            )
        cats = [int(table[c]) for c in cats]
    b = np.asarray(xyxy, np.float64).reshape(-1, 4)
    boxes = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1).tolist()
    scores = np.asarray(scores, np.float64).reshape(-1).tolist()
    return [{"image_id": image_id, "category_id": c, "bbox": box, "score": s}
            for c, box, s in zip(cats, boxes, scores, strict=True)]  # fmt: skip
