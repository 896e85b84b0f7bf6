"""Vectorised NMS against a slow, obviously-correct greedy NMS written with Python loops."""

from __future__ import annotations

import numpy as np
import pytest

import y9core.boxes as boxes_mod
from y9core.boxes import MAX_WH, nms
from y9core.boxes import box_iou_matrix as box_iou
from y9core.post.nms import batched_nms

F32 = np.float32


def ref_iou(a, b) -> float:
    """IoU of two xyxy boxes in float32 scalar arithmetic: inter / (area_a + area_b - inter)."""
    a, b = [F32(v) for v in a], [F32(v) for v in b]
    w = max(F32(0), min(a[2], b[2]) - max(a[0], b[0]))
    h = max(F32(0), min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    if union == 0:
        return float("nan")
    return float(inter / union)


def ref_nms(boxes, scores, thr, max_det=None) -> list[int]:
    """Visit boxes by descending score (Python's sort is stable), keep one unless a kept box has IoU > thr."""
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
    kept: list[int] = []
    for i in order:
        if all(not (ref_iou(boxes[k], boxes[i]) > thr) for k in kept):
            kept.append(i)
    return kept if max_det is None else kept[:max_det]


def random_boxes(rng, n, *, clusters=8, size=640.0, tie_levels=None):
    """Clustered boxes (so that NMS has work) with scores; optional quantised scores to force ties."""
    centres = rng.uniform(0, size, (clusters, 2))
    c = centres[rng.integers(clusters, size=n)] + rng.normal(0, 12, (n, 2))
    wh = rng.uniform(10, 80, (n, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1).astype(np.float32)
    scores = rng.random(n).astype(np.float32)
    if tie_levels:
        scores = (np.floor(scores * tie_levels) / tie_levels).astype(np.float32)
    return boxes, scores


@pytest.mark.parametrize("seed", range(12))
def test_nms_equals_reference_on_random_boxes(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    boxes, scores = random_boxes(rng, n, tie_levels=[None, 5, 20][seed % 3])
    thr = float(rng.choice([0.0, 0.3, 0.45, 0.5, 0.7, 0.95]))
    got = nms(boxes, scores, thr)
    assert got.dtype == np.int64
    assert got.tolist() == ref_nms(boxes, scores, thr)
    md = int(rng.integers(1, 20))
    assert nms(boxes, scores, thr, max_det=md).tolist() == ref_nms(boxes, scores, thr, md)


def test_nms_across_many_blocks_and_with_small_blocks(monkeypatch):
    rng = np.random.default_rng(42)
    boxes, scores = random_boxes(rng, 700, clusters=30, tie_levels=50)
    want = ref_nms(boxes, scores, 0.45)
    assert len(want) > 50
    assert nms(boxes, scores, 0.45).tolist() == want
    monkeypatch.setattr(boxes_mod, "BLOCK", 7)  # many blocks, kept boxes cross block borders
    assert nms(boxes, scores, 0.45).tolist() == want
    assert nms(boxes, scores, 0.45, max_det=10).tolist() == want[:10]


def test_long_suppression_chain_uses_the_exact_pass():
    # Box k overlaps box k+1 (IoU 0.6) but not box k+2: greedy keeps every other box. The chain is deeper than
    # the matrix fixed-point passes go, so the exact sequential pass decides.
    n = 60
    x = np.arange(n, dtype=np.float32) * 25
    boxes = np.stack([x, np.zeros(n, F32), x + 100, np.full(n, 100, F32)], 1)
    scores = np.linspace(1, 0.1, n, dtype=np.float32)
    want = ref_nms(boxes, scores, 0.5)
    assert want == list(range(0, n, 2))
    assert nms(boxes, scores, 0.5).tolist() == want


def test_box_iou_matches_the_scalar_formula_and_handles_degenerate_boxes():
    rng = np.random.default_rng(0)
    a, _ = random_boxes(rng, 20)
    b, _ = random_boxes(rng, 15)
    b[0] = [5, 5, 5, 5]  # zero area
    iou = box_iou(a, b)
    for i in range(20):
        for j in range(15):
            r = ref_iou(a[i], b[j])
            assert (np.isnan(r) and np.isnan(iou[i, j])) or iou[i, j] == F32(r)
    z = np.float32([[5, 5, 5, 5], [5, 5, 5, 5]])
    assert nms(z, np.float32([0.9, 0.8]), 0.5).tolist() == [0, 1]  # NaN IoU never suppresses


def test_threshold_compares_in_float64_like_the_reference_kernel():
    # IoU exactly float32(0.3) = 0.30000001: "> 0.3" holds in float64 (suppress) but not in float32.
    boxes = np.float32([[0, 0, 10, 10], [0, 0, 10, 3]])
    assert box_iou(boxes[:1], boxes[1:])[0, 0] == F32(0.3)
    assert nms(boxes, np.float32([0.9, 0.8]), 0.3).tolist() == [0]
    assert ref_nms(boxes, np.float32([0.9, 0.8]), 0.3) == [0]


def test_float64_boxes_compare_in_float64():
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 3]], np.float64)  # IoU exactly 0.3 in float64: not > 0.3
    assert box_iou(boxes[:1], boxes[1:])[0, 0] == 0.3
    assert nms(boxes, np.float32([0.9, 0.8]), 0.3).tolist() == [0, 1]


def test_ties_keep_input_order():
    boxes = np.float32([[0, 0, 10, 10], [100, 0, 110, 10], [0, 0, 10, 10.5], [200, 0, 210, 10]])
    scores = np.float32([0.5, 0.5, 0.5, 0.9])
    assert nms(boxes, scores, 0.5).tolist() == [3, 0, 1]


@pytest.mark.parametrize("seed", range(6))
def test_batched_nms_equals_nms_per_class(seed):
    rng = np.random.default_rng(100 + seed)
    boxes, scores = random_boxes(rng, 250, clusters=5, tie_levels=[None, 10][seed % 2])
    classes = rng.integers(0, 4, 250)
    want = []
    for c in range(4):
        idx = np.flatnonzero(classes == c)
        want += [int(idx[k]) for k in ref_nms(boxes[idx], scores[idx], 0.45)]
    want.sort(key=lambda i: (-float(scores[i]), i))
    # Per class vs with offsets: both sort ties by index; the offset version must give the same set/order
    # (float32 rounding of shifted coordinates may flip a pair within ~1e-4 of the threshold; these seeds do not).
    got = batched_nms(boxes, scores, classes, 0.45)
    assert got.tolist() == want
    assert batched_nms(boxes, scores, classes, 0.45, max_det=7).tolist() == want[:7]
    assert batched_nms(boxes, scores, classes, 0.45, agnostic=True).tolist() == ref_nms(boxes, scores, 0.45)


def test_class_offset_grows_when_boxes_span_more_than_7680():
    # Two boxes of different classes whose shifted copies would overlap with the official 7680 offset.
    boxes = np.float32([[7690, 0, 7790, 100], [10, 0, 110, 100]])
    assert boxes[0, 0] - MAX_WH == boxes[1, 0]
    kept = batched_nms(boxes, np.float32([0.9, 0.8]), np.array([0, 1]), 0.5)
    assert kept.tolist() == [0, 1]


def test_nms_validates_shapes_and_handles_empty_input():
    assert nms(np.zeros((0, 4), F32), np.zeros(0, F32)).tolist() == []
    with pytest.raises(ValueError, match="boxes has shape"):
        nms(np.zeros((3, 5)), np.zeros(3))
    with pytest.raises(ValueError, match="scores has shape"):
        nms(np.zeros((3, 4)), np.zeros(2))
    with pytest.raises(ValueError, match="classes has shape"):
        batched_nms(np.zeros((3, 4)), np.zeros(3), np.zeros(2))
