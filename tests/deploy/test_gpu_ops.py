"""The torch letterbox (``pre.torch_letterbox``) and the one torch post-processing
(``post.torch_batched``), run on CPU tensors here, against the numpy/cv2 host paths."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.conftest import shared_path  # noqa: E402
from tests.deploy.test_postprocess import random_prediction  # noqa: E402
from y9core.boxes import box_iou_matrix as box_iou  # noqa: E402
from y9core.post.torch_batched import batched_postprocess_torch, box_iou_torch  # noqa: E402
from y9deploy.postprocess import postprocess  # noqa: E402
from y9deploy.pre.host import prepare  # noqa: E402
from y9deploy.pre.torch_letterbox import prepare_torch  # noqa: E402


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
def test_batched_torch_equals_numpy_postprocess(seed):
    rng = np.random.default_rng(seed)
    nc = int(rng.choice([1, 4, 9]))
    pred = random_prediction(rng, 2, nc, int(rng.integers(80, 400)), ties=seed % 2 == 0)
    conf = float(rng.choice([0.01, 0.25, 0.5])) if seed % 4 != 3 else rng.uniform(0.05, 0.6, nc)
    kw = {
        "conf": conf,
        "iou": float(rng.choice([0.3, 0.45, 0.7])),
        "agnostic": seed % 3 == 1,
        "max_det": int(rng.choice([10, 300])),
        "classes": [0] if seed == 5 else None,
    }
    want = postprocess(pred, **kw)
    got = batched_postprocess_torch(torch.from_numpy(pred), scan="fixed-point", **kw)
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(g, w, err_msg=str(kw))


def test_batched_torch_reproduces_the_official_fixture():
    """The official NMS outputs (one best class per anchor: the settings without multi_label, which the
    Detector does not offer)."""
    data = np.load(shared_path("fixtures", "official", "official_nms.npz"))
    pred = torch.from_numpy(data["pred"])
    settings = {k[: k.rindex("_b")] for k in data.files if k != "pred"}
    assert len(settings) == 4
    single = [s for s in settings if s.endswith("_ml0")]
    assert single
    for setting in single:
        c, i, a, _ = re.fullmatch(r"conf([\d.]+)_iou([\d.]+)_agn(\d)_ml(\d)", setting).groups()
        got = batched_postprocess_torch(pred, conf=float(c), iou=float(i), agnostic=a == "1")
        for b in range(2):
            np.testing.assert_array_equal(got[b], data[f"{setting}_b{b}"], err_msg=f"{setting}_b{b}")


def test_box_iou_torch_equals_numpy():
    rng = np.random.default_rng(0)
    c = rng.uniform(0, 400, (25, 2))[rng.integers(25, size=600)] + rng.normal(0, 8, (600, 2))
    wh = rng.uniform(10, 60, (600, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1).astype(np.float32)
    boxes[7] = boxes[3]  # identical boxes: IoU exactly 1
    tb = torch.from_numpy(boxes)
    np.testing.assert_array_equal(
        box_iou_torch(tb[:50], tb[50:90]).numpy(), box_iou(boxes[:50], boxes[50:90])
    )
    batched = box_iou_torch(tb[:300].view(3, 100, 4), tb[:300].view(3, 100, 4)).numpy()  # leading dims
    for k in range(3):
        part = boxes[100 * k : 100 * (k + 1)]
        np.testing.assert_array_equal(batched[k], box_iou(part, part))


def test_batched_torch_validates_and_handles_empty():
    with pytest.raises(TypeError, match="torch.Tensor"):
        batched_postprocess_torch(np.zeros((1, 6, 10), np.float32))
    with pytest.raises(ValueError, match="shape"):
        batched_postprocess_torch(torch.zeros(6, 10))
    out = batched_postprocess_torch(torch.zeros(2, 6, 10))
    assert [o.shape for o in out] == [(0, 6), (0, 6)]
