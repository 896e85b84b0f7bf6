"""y9core's numpy and torch box IoU against a slow float64 Python reference, pycocotools, and each other.

The reference spells the formula of the module docstring pair by pair with Python floats (IEEE doubles, the
same operations in the same order), so float64 results must equal it exactly; float32 results agree with it
to float32 rounding, and the numpy and torch float32 results agree with each other bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from y9core.boxes import box_area, box_iou, box_iou_matrix

torch = pytest.importorskip("torch")
from y9core.box_iou_torch import box_area_torch, box_iou_matrix_torch, box_iou_torch  # noqa: E402


def ref_iou(p, q, *, eps=0.0, area_p=None, area_q=None, zero_empty=False) -> float:
    """IoU of two boxes (x1, y1, x2, y2), one Python float operation at a time."""
    p, q = [float(v) for v in p], [float(v) for v in q]
    ap = (p[2] - p[0]) * (p[3] - p[1]) if area_p is None else float(area_p)
    aq = (q[2] - q[0]) * (q[3] - q[1]) if area_q is None else float(area_q)
    w = max(min(p[2], q[2]) - max(p[0], q[0]), 0.0)
    h = max(min(p[3], q[3]) - max(p[1], q[1]), 0.0)
    inter = w * h
    union = ap + aq - inter
    if eps:
        union = union + eps
    if zero_empty and not inter > 0:
        return 0.0
    if union == 0:
        return math.nan if inter == 0 else math.copysign(math.inf, inter)
    return inter / union


def ref_matrix(a, b, **kw) -> np.ndarray:
    return np.array([[ref_iou(p, q, **kw) for q in b] for p in a], np.float64).reshape(len(a), len(b))


def random_boxes(rng, n, dtype=np.float64) -> np.ndarray:
    """Clustered boxes (many overlaps) with degenerate cases: zero width, zero height, points, duplicates."""
    c = rng.uniform(0, 200, (6, 2))[rng.integers(6, size=n)] + rng.normal(0, 15, (n, 2))
    wh = rng.uniform(1, 60, (n, 2))
    wh[rng.random(n) < 0.1, 0] = 0
    wh[rng.random(n) < 0.1, 1] = 0
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1)
    boxes[1::7] = boxes[0::7][: len(boxes[1::7])]  # identical boxes: IoU exactly 1 (or NaN for a point)
    return boxes.astype(dtype)


# Hand-made pairs: (a, b, IoU without eps).
CASES = [
    ((0, 0, 10, 10), (0, 0, 10, 10), 1.0),  # identical
    ((0, 0, 10, 10), (5, 0, 15, 10), 50 / 150),  # half overlap
    ((0, 0, 10, 10), (10, 0, 20, 10), 0.0),  # touching: empty intersection
    ((0, 0, 10, 10), (20, 20, 30, 30), 0.0),  # disjoint
    ((0, 0, 10, 10), (2, 2, 4, 4), 4 / 100),  # inside
    ((3, 3, 3, 3), (3, 3, 3, 3), math.nan),  # two equal points: zero union
    ((0, 0, 0, 10), (0, 0, 0, 10), math.nan),  # equal zero-width boxes: zero union
]


@pytest.mark.parametrize("a,b,want", CASES)
def test_hand_made_pairs(a, b, want):
    for dtype in (np.float32, np.float64):
        got = box_iou(np.array(a, dtype), np.array(b, dtype))
        assert got.shape == () and got.dtype == dtype
        t = box_iou_torch(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))
        for value in (float(got), t.item()):
            assert value == pytest.approx(want, rel=1e-6, nan_ok=True)
        # eps: a zero union gives 0 instead of NaN; zero_empty: 0 wherever the intersection is empty
        want_eps = 0.0 if math.isnan(want) else want
        assert float(box_iou(np.array(a, dtype), np.array(b, dtype), eps=1e-7)) == pytest.approx(
            want_eps, rel=1e-6
        )
        assert float(box_iou(np.array(a, dtype), np.array(b, dtype), zero_empty=True)) == pytest.approx(
            want_eps, rel=1e-6
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eps", [0.0, 1e-7, 0.5])
def test_pairwise_equals_the_float64_reference_exactly(seed, eps):
    rng = np.random.default_rng(seed)
    a, b = random_boxes(rng, 40), random_boxes(rng, 33)
    a[2] = b[4] = (10.5, 10.25, 50, 40)  # identical boxes: IoU 1 (less with eps)
    want = ref_matrix(a, b, eps=eps)
    assert np.isnan(want).any() == (eps == 0) and (want == 0).any() and (want[2, 4] > 0.99)  # the cases occur
    np.testing.assert_array_equal(box_iou_matrix(a, b, eps=eps), want)
    np.testing.assert_array_equal(
        box_iou_matrix_torch(torch.from_numpy(a), torch.from_numpy(b), eps=eps).numpy(), want
    )
    # float32: the same up to float32 rounding of the inputs and of each operation
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want32 = ref_matrix(a32, b32, eps=float(np.float32(eps)))
    np.testing.assert_allclose(box_iou_matrix(a32, b32, eps=eps), want32, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [3, 4])
def test_paired_broadcasting_is_the_same_function(seed):
    rng = np.random.default_rng(seed)
    a, b = random_boxes(rng, 300), random_boxes(rng, 300)
    want = np.array([ref_iou(p, q, eps=1e-7) for p, q in zip(a, b)])
    np.testing.assert_array_equal(box_iou(a, b, eps=1e-7), want)
    np.testing.assert_array_equal(
        box_iou_torch(torch.from_numpy(a), torch.from_numpy(b), eps=1e-7).numpy(), want
    )
    # [3, 1, N] x [1, 5, N] broadcasting; the matrix with leading dims [2]
    x, y = a[:24].reshape(3, 1, 8, 4), b[:40].reshape(1, 5, 8, 4)
    got = box_iou(x, y)
    assert got.shape == (3, 5, 8)
    for i in range(3):
        for j in range(5):
            np.testing.assert_array_equal(got[i, j], [ref_iou(p, q) for p, q in zip(x[i, 0], y[0, j])])
    m = box_iou_matrix(a[:20].reshape(2, 10, 4), b[:14].reshape(2, 7, 4))
    assert m.shape == (2, 10, 7)
    np.testing.assert_array_equal(m[1], ref_matrix(a[10:20], b[7:14]))


def test_given_areas_and_zero_empty_give_pycocotools_iou():
    """pycocotools' box IoU: xywh boxes, corners x + w, areas w * h, 0 where the intersection is empty."""
    mask = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(5)
    d, g = random_boxes(rng, 60), random_boxes(rng, 45)
    g[::3] = d[: len(g[::3])] + rng.normal(0, 1, (len(g[::3]), 4))  # near duplicates
    d_xywh, g_xywh = np.c_[d[:, :2], d[:, 2:] - d[:, :2]], np.c_[g[:, :2], g[:, 2:] - g[:, :2]]
    corners = [np.c_[x[:, :2], x[:, :2] + x[:, 2:]] for x in (d_xywh, g_xywh)]
    areas = [x[:, 2] * x[:, 3] for x in (d_xywh, g_xywh)]
    got = box_iou(corners[0][:, None], corners[1][None], area_a=areas[0][:, None], area_b=areas[1][None],
                  zero_empty=True)  # fmt: skip
    want = mask.iou(d_xywh, g_xywh, np.zeros(len(g_xywh), np.uint8))
    assert (want == 0).any() and (want > 0.5).any()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    # the same with the slow reference, exactly
    ref = np.array([[ref_iou(p, q, area_p=ap, area_q=aq, zero_empty=True)
                     for q, aq in zip(corners[1], areas[1])] for p, ap in zip(corners[0], areas[0])])  # fmt: skip
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("eps", [0.0, 1e-7])
def test_numpy_and_torch_agree_bit_for_bit_in_float32(eps):
    rng = np.random.default_rng(6)
    a, b = random_boxes(rng, 130, np.float32), random_boxes(rng, 90, np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    pairs = [
        (box_iou_matrix(a, b, eps=eps), box_iou_matrix_torch(ta, tb, eps=eps)),
        (box_iou(a[:90], b, eps=eps), box_iou_torch(ta[:90], tb, eps=eps)),
        (box_iou(a[:90], b, eps=eps, area_a=box_area(a[:90]) + 1, area_b=box_area(b) * 2),
         box_iou_torch(ta[:90], tb, eps=eps, area_a=box_area_torch(ta[:90]) + 1, area_b=box_area_torch(tb) * 2)),
    ]  # fmt: skip
    assert np.isnan(pairs[0][0]).any() == (eps == 0)  # zero unions occur (without eps)
    for want, got in pairs:
        assert want.dtype == np.float32 and got.dtype == torch.float32
        # the bits, NaN included
        np.testing.assert_array_equal(got.numpy().view(np.int32), want.view(np.int32))
    # with a gradient to track (the loss): the same values, and autograd's gradient is the float64 one
    tracked = ta[:90].clone().requires_grad_()
    np.testing.assert_array_equal(box_iou_torch(tracked, tb, eps=eps).detach().numpy(), pairs[1][0])
    c, wh = rng.uniform(0, 100, (50, 2)), rng.uniform(8, 30, (50, 2))
    p64 = torch.from_numpy(np.c_[c - wh / 2, c + wh / 2])
    q64 = p64 + torch.from_numpy(rng.uniform(-3, 3, (50, 4)))  # overlapping, away from the kinks
    p64.requires_grad_()
    assert torch.autograd.gradcheck(lambda p: box_iou_torch(p, q64, eps=1e-7), (p64,))


def test_integer_boxes_are_computed_in_float():
    a, b = np.array([[0, 0, 10, 10]]), np.array([[5, 0, 15, 10]])
    assert box_iou_matrix(a, b).dtype == np.float64 and box_iou_matrix(a, b)[0, 0] == 50 / 150
    assert box_iou_torch(torch.from_numpy(a), torch.from_numpy(b)).item() == pytest.approx(50 / 150)
