"""The CUDA-graph post-processing (``y9deploy.post.graph``), its steps run eagerly on CPU tensors with
Triton's interpreter (TRITON_INTERPRET=1), against the host ``postprocess`` (bit for bit), and the GpuPipeline
using it, against the host path. Graph capture itself needs a GPU: benchmarks/bench_detector_gpu.py (step
agree) compares the captured path's detections with the host path's on the H200.

SKIPPED when triton is not importable (it is in the project's dev extra on Linux x86-64, so CI runs these).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton", reason="triton is not importable", exc_type=ImportError)

from tests.deploy.test_detector_gpu_path import random_pred, random_settings, uneven_pred  # noqa: E402
from tests.deploy.triton_interpret import interpret_fast  # noqa: E402
from y9core.post import triton_nms as nms_triton  # noqa: E402
from y9core.post.choice import PostImpl  # noqa: E402
from y9deploy.post.graph import GraphPost, GraphStats, pick_k  # noqa: E402
from y9deploy.post.options import PredictOptions, resolve_options  # noqa: E402
from y9deploy.postprocess import postprocess  # noqa: E402


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    interpret_fast(monkeypatch)  # the interpreter, bit_or reductions by numpy (tests/deploy/triton_interpret.py)


def options(nc, **kw):
    return resolve_options(PredictOptions(), kw, nc=nc, end2end=False)


def run(post, pred, n=None, **kw):
    n = len(pred) if n is None else n
    return post.submit(torch.from_numpy(pred), n, options(post.nc, **kw)).rows()


def assert_rows_equal(got, want):
    assert len(got) == len(want)
    for x, y in zip(got, want):
        assert x.dtype == np.float32 and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_pick_k():
    assert [pick_k(c) for c in (0, 1, 64, 65, 128, 129, 3000)] == [64, 64, 64, 128, 128, 256, 4096]
    assert pick_k(5, min_k=1) == 8 and pick_k(1, min_k=1) == 1


@pytest.mark.parametrize("seed", range(4))  # ties (odd), a class filter (0, 3), per-class thresholds (1)
def test_equals_host_postprocess(seed):
    """Randomized raw outputs and settings (ties, class filter, per-class thresholds, agnostic, max_det); one
    GraphPost serves every setting in turn (the thresholds live in device buffers)."""
    rng = np.random.default_rng(500 + seed)
    b, nc, a = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(20, 300))
    post = GraphPost(nc, "cpu", min_k=int(rng.choice([1, 64])))
    for _ in range(2):
        pred = random_pred(rng, b, nc, a, ties=bool(seed % 2))
        kw = random_settings(rng, seed, nc)
        assert_rows_equal(run(post, pred, **kw), postprocess(pred, **kw))


@pytest.mark.parametrize("counts,chain", [([0, 1, 7, 31, 33, 65, 200, 2], (6,)), ([200, 3, 0, 129], (0,))])
def test_uneven_counts_chains_and_fallbacks(counts, chain, monkeypatch):
    """Very different candidate counts and dense suppression chains in one batch; then the two fallbacks to the
    eager path: K above the kernel's limit, and packed IoU bits above the budget (bytes)."""
    rng = np.random.default_rng(sum(counts))
    pred = uneven_pred(rng, counts, a=700, chain=chain)
    post = GraphPost(3, "cpu")
    for kw in (dict(), dict(agnostic=True), dict(max_det=4), dict(iou=0.65), dict(classes=[1])):
        assert_rows_equal(run(post, pred, conf=0.25, **kw), postprocess(pred, conf=0.25, **kw))
    assert post.stats.eager == 0 and post.stats.graph == 5
    monkeypatch.setattr(nms_triton, "MAX_K", 64)
    assert_rows_equal(run(post, pred, conf=0.25), postprocess(pred, conf=0.25))
    assert post.stats.eager == 1
    monkeypatch.undo()
    small = GraphPost(3, "cpu", budget=1000)
    assert_rows_equal(run(small, pred, conf=0.25), postprocess(pred, conf=0.25))
    assert small.stats == GraphStats(graph=0, eager=1, k=0)


def test_k_from_the_last_batch_and_reruns(monkeypatch):
    """After the first batch of a shape, K comes from the previous batch (no counts download); a batch with more
    candidates than that K is run again with a K that fits, from its own kept data, even when the next batch was
    submitted before its rows were read (two lanes)."""
    rng = np.random.default_rng(11)
    few, many = uneven_pred(rng, [5, 20], a=700), uneven_pred(rng, [200, 40], a=700)
    post = GraphPost(3, "cpu")
    opts = options(3, conf=0.25)
    assert_rows_equal(post.submit(torch.from_numpy(few), 2, opts).rows(), postprocess(few, conf=0.25))
    assert post.stats == GraphStats(graph=1, eager=0, k=64)
    assert_rows_equal(post.submit(torch.from_numpy(many), 2, opts).rows(), postprocess(many, conf=0.25))
    assert post.stats == GraphStats(graph=3, eager=0, k=256)  # ran at K=64, then again at 256
    a = post.submit(torch.from_numpy(few), 2, opts)  # K=256 from the last batch: no rerun
    assert post.stats.graph == 4 and post.stats.k == 256
    b = post.submit(torch.from_numpy(many), 2, opts)  # pending together with a (the other lane)
    assert_rows_equal(a.rows(), postprocess(few, conf=0.25))
    assert_rows_equal(b.rows(), postprocess(many, conf=0.25))
    c = post.submit(torch.from_numpy(few), 2, opts)  # both at K=256 (set by b's rows)
    d = post.submit(torch.from_numpy(many), 2, opts)
    assert_rows_equal(d.rows(), postprocess(many, conf=0.25))  # rows in the other order, reruns included
    assert_rows_equal(c.rows(), postprocess(few, conf=0.25))
    post.submit(torch.from_numpy(few), 2, opts).rows()  # K back to 64
    monkeypatch.setattr(nms_triton, "MAX_K", 128)  # the rerun of the next batch needs 256: the eager path
    e = post.submit(torch.from_numpy(many), 2, opts)
    blk, kept = e.block()
    assert e.ready is not None and post.stats.eager == 1
    want = postprocess(many, conf=0.25)
    assert_rows_equal(e.rows(), want)
    assert_rows_equal([blk[i, : kept[i]] for i in range(2)], want)


def test_padding_images_fp16_and_no_candidates():
    """Only the first n images are returned, and padding images (here with far more candidates than the real
    ones) do not change them; float16 outputs; a batch without candidates."""
    rng = np.random.default_rng(7)
    pred = uneven_pred(rng, [20, 10, 300], a=700)
    post = GraphPost(3, "cpu")
    got = run(post, pred, n=2, conf=0.25)
    assert len(got) == 2
    assert_rows_equal(got, postprocess(pred[:2], conf=0.25))
    half = pred.astype(np.float16)
    assert_rows_equal(run(post, half, conf=0.25), postprocess(half, conf=0.25))
    assert [len(r) for r in run(post, pred, conf=1.0)] == [0, 0, 0]


def test_bad_input():
    post = GraphPost(3, "cpu")
    with pytest.raises(ValueError, match="expected \\[B, 7, A\\] for 3 classes"):
        post.submit(torch.zeros(1, 6, 10), 1, PredictOptions())
    with pytest.raises(ValueError, match="graphs=True needs a CUDA device"):
        GraphPost(3, "cpu", graphs=True)


def test_gpu_pipeline_uses_graph_post(embedded_pt):
    """GpuPipeline(graph_post=True) on CPU tensors: predict and predict_stream give the host path's detections
    (the embedded model, at 128)."""
    import cv2

    from tests.conftest import TEST_DATA
    from y9deploy import Detector
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    pt = embedded_pt
    frames = [cv2.imread(str(TEST_DATA / n)) for n in ("000000000036.jpg", "000000000042.jpg")]
    with Detector(pt, imgsz=128, device="cpu") as det:
        from y9deploy.pre.host import prepare

        raw = det.backend.infer(prepare(frames, (128, 128))[0])["output0"]
        conf = float(np.sort(raw[:, 4:].max(1).ravel())[-200])  # ~100 candidates per frame
        batches = [frames, frames[:1], frames[::-1]]
        # the host path on the same batches: a batch's composition changes the network's last bits on the CPU
        hosts = [det.predict(b, conf=conf, iou=0.7) for b in batches]
        assert sum(len(d) for d in hosts[0]) > 20
        det.pipeline = pipe = GpuPipeline(det.backend, det.info, device="cpu", graph_post=True, workers=2)
        assert pipe.post is PostImpl.GRAPH
        for got, want in zip(
            [det.predict(b, conf=conf, iou=0.7) for b in batches]
            + list(det.predict_stream(batches, conf=conf, iou=0.7)),
            hosts * 2,
        ):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a.xyxy, b.xyxy)
                np.testing.assert_array_equal(a.class_id, b.class_id)
                np.testing.assert_array_equal(a.confidence, b.confidence)
