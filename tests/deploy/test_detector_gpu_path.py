"""The Detector's GPU path, run on CPU tensors (the same torch code): batched decode + NMS against the host
``postprocess`` (identical results), and the whole GpuPipeline with the torch backend against the host path."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from y9deploy.postprocess import postprocess
from y9deploy.pre.host import prepare

torch = pytest.importorskip("torch")
from y9core.post.torch_batched import batched_postprocess_torch  # noqa: E402


def random_pred(rng, b, nc, a, ties=True):
    p = np.zeros((b, 4 + nc, a), np.float32)
    p[:, :2] = rng.uniform(0, 320, (b, 2, a))
    p[:, 2:4] = rng.uniform(4, 80, (b, 2, a))
    s = rng.uniform(0, 1, (b, nc, a))
    p[:, 4:] = s.round(2) if ties else s  # rounded scores: many exact ties, the order must still agree
    return p


def random_settings(rng, seed, nc):
    """postprocess keyword arguments drawn from ``rng``: thresholds, agnostic, max_det, and by ``seed`` a class
    filter (seed % 3 == 0) or per-class confidence thresholds (seed % 4 == 1)."""
    kw = dict(conf=float(rng.choice([0.05, 0.3, 0.7])), iou=float(rng.choice([0.2, 0.45, 0.7])),
              agnostic=bool(rng.integers(2)), max_det=int(rng.choice([3, 50, 300])))  # fmt: skip
    if seed % 3 == 0:
        kw["classes"] = [0, nc - 1]
    if seed % 4 == 1:
        kw["conf"] = list(rng.uniform(0.2, 0.8, nc))
    return kw


@pytest.mark.parametrize("seed", range(12))
def test_batched_equals_host_postprocess(seed):
    rng = np.random.default_rng(seed)
    b, nc, a = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(20, 700))
    pred = random_pred(rng, b, nc, a, ties=bool(seed % 2))
    kw = random_settings(rng, seed, nc)
    want = postprocess(pred, **kw)
    budget = int(
        rng.choice([1 << 27, 4 * a * a, a * a // 4])
    )  # one group, several groups, the per-image path
    got = batched_postprocess_torch(torch.from_numpy(pred), **kw, budget=budget)
    assert len(got) == b
    for x, y in zip(got, want):
        assert x.dtype == np.float32 and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_batched_edge_cases():
    rng = np.random.default_rng(0)
    pred = random_pred(rng, 3, 4, 50)
    assert [len(r) for r in batched_postprocess_torch(torch.from_numpy(pred), conf=1.0)] == [0, 0, 0]
    pred[1, 4:] = 0  # one image without candidates among others
    got = batched_postprocess_torch(torch.from_numpy(pred), conf=0.3)
    assert len(got[1]) == 0 and len(got[0]) > 0
    half = batched_postprocess_torch(torch.from_numpy(pred).half(), conf=0.3)
    want = postprocess(pred.astype(np.float16), conf=0.3)
    for x, y in zip(half, want):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="max_det"):
        batched_postprocess_torch(torch.from_numpy(pred), max_det=0)
    with pytest.raises(ValueError, match="shape"):
        batched_postprocess_torch(torch.zeros(2, 4, 10))


def test_gpu_pipeline_with_torch_backend_on_cpu(embedded_pt):
    """TorchBackend returns torch tensors to the GpuPipeline: batched post-processing on them gives the host
    path's detections (CPU letterbox) or nearly (torch letterbox, within one grey level). The embedded model
    (trained weights) at 128."""
    from y9deploy import Detector
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    frames = [cv2.imread(str(TEST_DATA / n)) for n in ("000000000036.jpg", "000000000042.jpg")]
    with Detector(embedded_pt, imgsz=128, device="cpu") as det:
        raw = det.backend.infer(prepare(frames, 128)[0])["output0"]
        conf = float(min(np.sort(raw[i, 4:].max(0))[-40] for i in range(2)))  # tens of candidates per image
        host = det.predict(frames, conf=conf)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="cpu", workers=2)
        for a, b in zip(host, det.predict(frames, conf=conf)):
            np.testing.assert_array_equal(a.xyxy, b.xyxy)
            np.testing.assert_array_equal(a.class_id, b.class_id)
        for pre, post in (("hybrid", "cpu"), ("hybrid", "gpu"), ("cpu", "gpu")):
            det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre=pre, post=post, workers=2)
            for a, b in zip(host, det.predict(frames, conf=conf)):
                np.testing.assert_array_equal(a.xyxy, b.xyxy)
                np.testing.assert_array_equal(a.class_id, b.class_id)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="gpu")
        for a, b in zip(host, det.predict(frames, conf=conf)):
            assert abs(len(a) - len(b)) <= max(1, len(a) // 10)
        same = [frames[0], np.ascontiguousarray(frames[0][::-1])]  # same size: the one-pass batch letterbox
        for a, b in zip(det.predict(same, conf=conf), [det.predict(f, conf=conf) for f in same]):
            # batch of 2 == two single calls (per-frame path); the network's last bits depend on the batch size
            # on the CPU, so boxes agree to float32 rounding, classes exactly
            np.testing.assert_allclose(a.xyxy, b.xyxy, rtol=0, atol=1e-3)
            np.testing.assert_array_equal(a.class_id, b.class_id)


@pytest.mark.parametrize(
    "hw,imgsz", [((1080, 1920), (640, 640)), ((300, 301), (96, 128)), ((64, 64), (64, 64))]
)
def test_letterbox_batch_equals_per_frame_prepare_torch(hw, imgsz):
    """The Detector's one-pass letterbox of a same-size batch gives prepare_torch's values exactly."""
    from y9deploy.pre.torch_letterbox import letterbox_batch_torch as letterbox_batch
    from y9deploy.pre.torch_letterbox import prepare_torch

    frames = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (3, *hw, 3), dtype=np.uint8))
    for dtype in (torch.float16, torch.float32):
        want, want_info = prepare_torch(frames, imgsz, dtype=dtype, color=(10, 20, 30))
        got, got_info = letterbox_batch(frames, imgsz, dtype=dtype, color=(10, 20, 30))
        assert got.dtype == dtype and torch.equal(got, want) and got_info == want_info


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hybrid_preprocess_is_bit_equal_to_prepare(dtype, channels_last):
    """CPU letterbox to uint8 + RGB/CHW//255 on the device == preprocess.prepare, bit for bit; as contiguous
    NCHW, or (a backend taking channels_last) with NHWC strides."""
    from types import SimpleNamespace

    from y9deploy.pre.host import letterbox_batch_u8, prepare
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    rng = np.random.default_rng(3)
    frames = [
        rng.integers(0, 256, hw + (3,), dtype=np.uint8) for hw in [(1080, 1920), (480, 640), (333, 517)]
    ]
    backend = SimpleNamespace(
        input_hw=(384, 640), device="cpu", input_dtype=dtype, end2end=False, input_channels_last=channels_last
    )
    info = SimpleNamespace(names=["a"], letterbox={"scaleup": True, "stride": 32, "color": 114})
    pipe = GpuPipeline(backend, info, device="cpu", pre="hybrid", workers=2)
    try:
        blob, infos = pipe.pre_stage.run(frames, len(frames))
    finally:
        pipe.close()
    ref, ref_infos = prepare(frames, (384, 640), dtype=dtype)
    assert blob.dtype == (torch.float16 if dtype == np.float16 else torch.float32)
    np.testing.assert_array_equal(blob.numpy(), ref)
    assert infos == ref_infos
    assert blob.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    u8, _ = letterbox_batch_u8(frames, (384, 640))
    from y9deploy.preprocess import letterbox

    for img, frame in zip(u8, frames):
        np.testing.assert_array_equal(img, letterbox(frame, (384, 640))[0])


def uneven_pred(rng, counts, nc=3, a=1200, chain=()):
    """[B, 4+nc, A] raw output whose image i has exactly counts[i] anchors with a best score > 0.25; images in
    ``chain`` get boxes in a row, each overlapping the next (by descending score): the longest suppression
    chains."""
    p = np.zeros((len(counts), 4 + nc, a), np.float32)
    p[:, :2] = rng.uniform(0, 320, (len(counts), 2, a))
    p[:, 2:4] = rng.uniform(4, 80, (len(counts), 2, a))
    p[:, 4:] = rng.uniform(0, 0.2, (len(counts), nc, a))
    for i, n in enumerate(counts):
        pos = rng.choice(a, n, replace=False)
        p[i, 4 + rng.integers(0, nc, n), pos] = rng.uniform(0.3, 1, n).round(2)  # ties
        if i in chain:
            order = np.sort(pos)[
                np.argsort(-p[i, 4:].max(0)[np.sort(pos)], kind="stable")
            ]  # postprocess order
            p[i, 0, order] = 10 + 5 * np.arange(
                n
            )  # 20 px wide, 5 px apart: IoU 0.6 with the next, 0.33 after
            p[i, 1, order], p[i, 2, order], p[i, 3, order] = 50, 20, 20
    return p


@pytest.mark.parametrize(
    "counts,budget,chain",
    [
        ([0, 1, 7, 31, 32, 33, 64, 65, 300, 2], 1 << 27, (8,)),
        ([700, 3, 3, 0, 129], 1 << 27, (0,)),
        ([40, 40, 41, 40, 39, 1000], 600 * 600, (5,)),  # the 1000-candidate image alone: the host fallback
        ([40, 40, 41, 40, 39, 1000, 250], 60 * 60, (2,)),  # the 40s in groups of 2; 250 and 1000 alone
    ],
)
def test_bucketed_uneven_counts_equal_host_postprocess(counts, budget, chain):
    """Very uneven candidate counts across a batch (buckets of their own k, groups, host fallback)."""
    rng = np.random.default_rng(len(counts) + budget % 97)
    pred = uneven_pred(rng, counts, chain=chain)
    for kw in (dict(), dict(agnostic=True, iou=0.7), dict(max_det=5), dict(max_nms=50, iou=0.3)):
        want = postprocess(pred, conf=0.25, **kw)
        for min_bucket in (32, 1 << 15):  # buckets; one bucket at the largest k
            got = batched_postprocess_torch(
                torch.from_numpy(pred), conf=0.25, budget=budget, min_bucket=min_bucket, **kw
            )
            assert [len(r) for r in got] == [len(r) for r in want]
            for x, y in zip(got, want):
                np.testing.assert_array_equal(x, y)
    if chain:  # the chain image really is a chain: greedy keeps every other box
        rows = postprocess(pred[list(chain)], conf=0.25, agnostic=True, max_det=10_000)[0]
        assert len(rows) == -(-counts[chain[0]] // 2)


def test_bucket_images():
    from y9core.post.torch_batched import bucket_images

    counts = [0, 1, 32, 33, 64, 65, 5, 0, 300, 257]
    buckets = bucket_images(counts)
    assert buckets == [(32, [1, 2, 6]), (64, [3, 4]), (65, [5]), (300, [8, 9])]
    assert sorted(i for _, idx in buckets for i in idx) == [i for i, n in enumerate(counts) if n]
    assert bucket_images([0, 0]) == []
