"""The embedded default model (``y9deploy.default_model_path()``, trained by y9 on coco128) for the runtime and
export tests, and the eight coco8 images of tests/data with their labels.

Trained weights are well conditioned: torch, ONNX Runtime and end-to-end outputs agree to float32 rounding on
any x86-64 CPU, unlike random networks on real photos (which amplify the last bits). The parity tests run at
``IMGSZ`` (the model's own 416); ONNX exports are made once per test run (``embedded_export`` in conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA

IMGSZ = 416  # the embedded model's own input size (MODEL_CARD.md)


def anchors(size: int) -> int:
    """Raw head outputs (anchor points) of a square ``size`` input at strides 8, 16, 32."""
    return sum((size // s) ** 2 for s in (8, 16, 32))


ANCHORS = anchors(IMGSZ)
COCO8 = sorted(TEST_DATA.glob("*.jpg"))


@dataclass(frozen=True)
class LabelledImage:
    path: Path
    frame: np.ndarray  # HxWx3 uint8 BGR
    boxes: np.ndarray  # (M, 5) float32: class, x1, y1, x2, y2 in frame pixels


def embedded_model_path() -> Path:
    """The embedded checkpoint; a test FAILS (never skips) when it is missing: it is part of the repository."""
    from y9deploy import default_model_path

    path = default_model_path(check=False)
    if not path.is_file():
        pytest.fail(f"the embedded default model {path} is missing; it ships with the repository")
    return path


def coco8_images() -> list[LabelledImage]:
    """The eight coco8 images of tests/data with their ground truth in pixels."""
    assert len(COCO8) == 8, COCO8
    out = []
    for p in COCO8:
        frame = cv2.imread(str(p))
        assert frame is not None, p
        h, w = frame.shape[:2]
        rows = np.loadtxt(p.with_suffix(".txt"), ndmin=2, dtype=np.float32).reshape(-1, 5)
        cx, cy, bw, bh = rows[:, 1] * w, rows[:, 2] * h, rows[:, 3] * w, rows[:, 4] * h
        boxes = np.stack([rows[:, 0], cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], 1)
        out.append(LabelledImage(p, frame, boxes.astype(np.float32)))
    return out


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix of (N, 4) and (M, 4) xyxy boxes."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), 2)
    area = lambda x: np.prod(x[:, 2:] - x[:, :2], 1)  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None] - inter + 1e-9)


def unmatched(a, b, *, box_px: float, score: float, skip_below: float = -1.0) -> list[int]:
    """Indices of ``a``'s detections (Detections) without a partner in ``b``: same class, every box coordinate
    within ``box_px`` pixels and the score within ``score``; one to one. Detections of ``a`` scoring below
    ``skip_below`` (those near the threshold, which rounding may move across it) are not required to match."""
    used = np.zeros(len(b), bool)
    missing = []
    for i in range(len(a)):
        if a.confidence[i] < skip_below:
            continue
        d = np.abs(b.xyxy - a.xyxy[i]).max(1) if len(b) else np.zeros(0)
        ok = (d <= box_px) & (b.class_id == a.class_id[i]) & (np.abs(b.confidence - a.confidence[i]) <= score)
        j = np.flatnonzero(ok & ~used)
        if len(j):
            used[j[np.argmin(d[j])]] = True
        else:
            missing.append(i)
    return missing
