"""torch pre/post-processing (run on CPU tensors here) against the numpy/cv2 host paths."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import y9deploy.gpu_ops as gpu_ops  # noqa: E402
from tests.conftest import shared_path  # noqa: E402
from tests.deploy.test_postprocess import random_prediction  # noqa: E402
from y9deploy.gpu_ops import (  # noqa: E402
    box_iou_torch,
    nms_sorted_torch,
    postprocess_torch,
    prepare_torch,
    scale_boxes_torch,
)
from y9deploy.nms import box_iou, nms_sorted  # noqa: E402
from y9deploy.postprocess import postprocess  # noqa: E402
from y9deploy.preprocess import letterbox_info, prepare, scale_boxes  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small tensors: one intra-op thread is much faster than two on a loaded 2-core box."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _frame(hw, seed=0, smooth=False):
    img = np.random.default_rng(seed).integers(0, 256, (*hw, 3), np.uint8)
    return cv2.GaussianBlur(img, (0, 0), 3) if smooth else img


@pytest.mark.parametrize("hw", [(1080, 1920), (720, 1280), (640, 640), (480, 640)])
def test_prepare_torch_is_identical_without_resize_or_for_integer_downscale(hw):
    img = _frame(hw, 1)
    ref, infos = prepare(img, 640)
    got, tinfos = prepare_torch(torch.from_numpy(img), 640, dtype=torch.float32)
    assert got.dtype == torch.float32 and tuple(got.shape) == ref.shape
    np.testing.assert_array_equal(got.numpy(), ref)
    assert tinfos == infos


@pytest.mark.parametrize(
    "hw,smooth", [((333, 517), False), ((333, 517), True), ((100, 90), True), ((1500, 400), False)]
)
def test_prepare_torch_within_one_grey_level_of_cv2_for_fractional_scales(hw, smooth):
    img = _frame(hw, 2, smooth)
    ref, _ = prepare(img, 320)
    got, _ = prepare_torch([torch.from_numpy(img)], 320, dtype=torch.float32)
    diff = np.abs(got.numpy() - ref) * 255
    assert diff.max() <= 1 + 1e-4
    assert (diff > 0.5).mean() < 0.2  # most pixels identical
    half, _ = prepare_torch(img, 320)  # an ndarray is uploaded; float16 by default
    assert half.dtype == torch.float16
    np.testing.assert_allclose(half.float().numpy(), ref, atol=1 / 255 + 1e-3)


def test_prepare_torch_batch_mixed_sizes_and_padding_colour():
    frames = [_frame((360, 640), 3), _frame((300, 150), 4)]
    got, infos = prepare_torch([torch.from_numpy(f) for f in frames], (256, 384), color=(10, 20, 30))
    ref, rinfos = prepare(frames, (256, 384), color=(10, 20, 30), dtype=np.float16)
    assert infos == rinfos and got.shape == (2, 3, 256, 384)
    np.testing.assert_allclose(got.float().numpy(), ref.astype(np.float32), atol=1 / 255 + 1e-3)
    assert got[1, :, 0, 0].tolist() == torch.tensor([30, 20, 10]).div(255).half().tolist()
    batch = torch.from_numpy(np.stack([frames[0], frames[0]]))
    b2, _ = prepare_torch(batch, 320, dtype=torch.float32)
    np.testing.assert_array_equal(b2[1].numpy(), prepare(frames[0], 320)[0][0])  # 640x360 -> 320x180: 2x


@pytest.mark.parametrize(
    "frames,exc,words",
    [
        ([], ValueError, "empty"),
        (torch.zeros((10, 10, 3), dtype=torch.float32), TypeError, "dtype"),
        (torch.zeros((10, 10, 4), dtype=torch.uint8), ValueError, "shape (10, 10, 4)"),
        ([None], TypeError, "frame 0 is None"),
        (None, TypeError, "NoneType"),
    ],
)
def test_prepare_torch_rejects_bad_frames(frames, exc, words):
    with pytest.raises(exc) as info:
        prepare_torch(frames, 320)
    assert words in str(info.value)


@pytest.mark.parametrize("seed", range(8))
def test_postprocess_torch_equals_numpy_postprocess(seed):
    rng = np.random.default_rng(seed)
    nc = int(rng.choice([1, 4, 9]))
    pred = random_prediction(rng, 2, nc, int(rng.integers(80, 400)), ties=seed % 2 == 0)
    conf = float(rng.choice([0.01, 0.25, 0.5])) if seed % 4 != 3 else rng.uniform(0.05, 0.6, nc)
    kw = {
        "conf": conf,
        "iou": float(rng.choice([0.3, 0.45, 0.7])),
        "agnostic": seed % 3 == 1,
        "multi_label": seed % 4 in (1, 2),
        "max_det": int(rng.choice([10, 300])),
        "classes": [0] if seed == 5 else None,
    }
    want = postprocess(pred, **kw)
    got = postprocess_torch(torch.from_numpy(pred), **kw)
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        assert g.dtype == torch.float32
        np.testing.assert_array_equal(g.numpy(), w, err_msg=str(kw))


def test_postprocess_torch_reproduces_the_official_fixture():
    data = np.load(shared_path("fixtures", "official", "official_nms.npz"))
    pred = torch.from_numpy(data["pred"])
    settings = {k[: k.rindex("_b")] for k in data.files if k != "pred"}
    assert len(settings) == 4
    for setting in settings:
        c, i, a, m = re.fullmatch(r"conf([\d.]+)_iou([\d.]+)_agn(\d)_ml(\d)", setting).groups()
        got = postprocess_torch(pred, conf=float(c), iou=float(i), agnostic=a == "1", multi_label=m == "1")
        for b in range(2):
            np.testing.assert_array_equal(got[b].numpy(), data[f"{setting}_b{b}"], err_msg=f"{setting}_b{b}")


def test_nms_sorted_torch_equals_numpy_across_blocks_and_chains(monkeypatch):
    rng = np.random.default_rng(0)
    c = rng.uniform(0, 400, (25, 2))[rng.integers(25, size=600)] + rng.normal(0, 8, (600, 2))
    wh = rng.uniform(10, 60, (600, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1).astype(np.float32)
    tb = torch.from_numpy(boxes)
    want = nms_sorted(boxes, 0.45)
    assert nms_sorted_torch(tb, 0.45).tolist() == want.tolist()
    monkeypatch.setattr(gpu_ops, "BLOCK", 37)
    assert nms_sorted_torch(tb, 0.45).tolist() == want.tolist()
    assert nms_sorted_torch(tb, 0.45, max_det=9).tolist() == want[:9].tolist()
    x = np.arange(80, dtype=np.float32) * 25  # a chain: each box overlaps the next one only
    chain = np.stack([x, np.zeros(80, np.float32), x + 100, np.full(80, 100, np.float32)], 1)
    assert nms_sorted_torch(torch.from_numpy(chain), 0.5).tolist() == list(range(0, 80, 2))
    np.testing.assert_array_equal(
        box_iou_torch(tb[:50], tb[50:90]).numpy(), box_iou(boxes[:50], boxes[50:90])
    )


def test_postprocess_torch_validates_and_handles_empty():
    with pytest.raises(TypeError, match="torch.Tensor"):
        postprocess_torch(np.zeros((1, 6, 10), np.float32))
    with pytest.raises(ValueError, match="shape"):
        postprocess_torch(torch.zeros(6, 10))
    out = postprocess_torch(torch.zeros(2, 6, 10))
    assert [tuple(o.shape) for o in out] == [(0, 6), (0, 6)]


def test_scale_boxes_torch_equals_numpy():
    info = letterbox_info((333, 517), 640, scaleup=False)
    rows = np.random.default_rng(0).uniform(-20, 660, (30, 6)).astype(np.float32)
    np.testing.assert_allclose(
        scale_boxes_torch(torch.from_numpy(rows), info).numpy(), scale_boxes(rows, info)
    )
