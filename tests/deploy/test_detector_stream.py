"""Detector.predict_stream: the same detections as predict on every batch (host path, and the GpuPipeline's
code on CPU tensors for every pre/post placement), batches pulled at most one ahead, two staging buffers
reused, the next batch staged while the current one's results are consumed, clear errors; and
benchmark(stream=True)."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from y9core.errors import Y9Error
from y9deploy.measure.bench import BenchmarkResult, benchmark, compare, synthetic_frame

torch = pytest.importorskip("torch")
from y9deploy import Detector  # noqa: E402
from y9deploy.runtime.gpu_pipeline import GpuPipeline  # noqa: E402

IMGS = [TEST_DATA / n for n in ("000000000036.jpg", "000000000042.jpg")]


@pytest.fixture(scope="module")
def checkpoint(embedded_pt):
    """The embedded default model (trained weights), run at 128 here."""
    return embedded_pt


def make_batches():
    """Uneven batches: two sizes of real images, a same-size ndarray batch, a path, a batch of five."""
    a, b = (cv2.imread(str(p)) for p in IMGS)
    same = np.stack([synthetic_frame(120, 200, seed=s) for s in range(3)])
    return [[a, b], same, [IMGS[0]], [b, a, b, a, b], [synthetic_frame(90, 160, seed=7)]]


def assert_same(x, y):
    assert len(x) == len(y)
    for a, b in zip(x, y):
        np.testing.assert_array_equal(a.xyxy, b.xyxy)
        np.testing.assert_array_equal(a.confidence, b.confidence)
        np.testing.assert_array_equal(a.class_id, b.class_id)


def pick_conf(det) -> float:
    """The 200th best anchor score on an all-zero input (the lowest one where the input has fewer anchors)."""
    raw = det.backend.infer(np.zeros((1, 3, *det.imgsz), np.float32))["output0"]
    best = np.sort(np.asarray(raw)[0, 4:].max(0))
    return float(best[-min(200, len(best))])


PIPELINES = [("hybrid", "gpu"), ("hybrid", "cpu"), ("cpu", "gpu"), ("gpu", "gpu")]


@pytest.mark.parametrize("batch_range", [None, (2, 2)])  # (2, 2): a static batch of 2, chunks and padding
def test_stream_equals_predict(checkpoint, batch_range):
    """At 64 (84 anchors, a quarter of 128's pixels): every comparison is bit for bit between two ways of running
    the same network, which the input size does not change; ten passes over the eleven frames."""
    with Detector(checkpoint, imgsz=64, device="cpu") as det:
        if batch_range:
            det.backend.batch_range = batch_range
        conf = pick_conf(det)
        host = [det.predict(b, conf=conf) for b in make_batches()]
        assert sum(len(d) for r in host for d in r) > 20  # detections to compare
        got = list(det.predict_stream(make_batches(), conf=conf))  # host path: one batch after the other
        assert len(got) == len(host)
        for x, y in zip(got, host):
            assert_same(x, y)
        for pre, post in PIPELINES:
            det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre=pre, post=post, workers=2)
            want = [det.predict(b, conf=conf) for b in make_batches()]
            got = list(det.predict_stream(iter(make_batches()), conf=conf))
            for x, y, h in zip(got, want, host):
                assert_same(x, y)
                if pre != "gpu":  # the OpenCV letterbox: the host path's detections exactly
                    assert_same(x, h)
            det.pipeline.close()


def test_stream_pulls_one_ahead_and_reuses_two_buffers(checkpoint):
    """Bounded memory: batches are pulled from the caller at most two ahead of the results, and the two
    staging buffers are reused from one stream to the next."""
    with Detector(checkpoint, imgsz=128, device="cpu") as det:
        det.pipeline = pipe = GpuPipeline(det.backend, det.info, device="cpu", pre="hybrid", workers=2)
        frames = [synthetic_frame(120, 200, seed=s) for s in range(2)]
        pulled = []

        def source(n):
            for i in range(n):
                pulled.append(i)
                yield frames

        for i, _ in enumerate(det.predict_stream(source(6))):
            assert len(pulled) <= i + 3  # batch i delivered, i+1 on the device, i+2 being letterboxed
        host = pipe.stream_runner.slots.host_buffers
        slots = [s.data_ptr() for s in host]
        assert len(slots) == 2 and None not in host and slots[0] != slots[1]
        list(det.predict_stream(source(4)))
        assert [s.data_ptr() for s in pipe.stream_runner.slots.host_buffers] == slots


def test_stream_stages_next_batch_while_results_are_consumed(checkpoint):
    """The letterbox of batch i+1 starts before the caller is done with batch i (a sequential loop would
    start it only when the caller asks for the next result)."""
    with Detector(checkpoint, imgsz=128, device="cpu") as det:
        det.pipeline = pipe = GpuPipeline(det.backend, det.info, device="cpu", pre="hybrid", workers=2)
        starts, received = [], []
        runner = pipe.stream_runner
        stage = runner.stage

        def timed_stage(*args):
            starts.append(time.perf_counter())
            return stage(*args)

        runner.stage = timed_stage
        frames = [synthetic_frame(120, 200, seed=s) for s in range(2)]
        for _ in det.predict_stream(frames for _ in range(4)):
            received.append(time.perf_counter())
            time.sleep(0.3)  # the caller's own work on the results
        assert len(starts) == 4
        for i in range(3):
            assert starts[i + 1] < received[i] + 0.15


def test_stream_errors(checkpoint):
    frame = synthetic_frame(90, 160)
    det = Detector(checkpoint, imgsz=128, device="cpu")
    for bad in (np.zeros((2, 90, 160, 3), np.uint8), "video.mp4", 3):
        with pytest.raises(TypeError, match="expected an iterable of batches"):
            det.predict_stream(bad)
    with pytest.raises(ValueError, match="conf"):
        det.predict_stream([[frame]], conf=2.0)
    for gpu in (False, True):
        if gpu:
            det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="hybrid", workers=2)
        results = det.predict_stream([[frame], [frame, np.zeros((10, 10), np.uint8)], [frame]])
        assert len(next(results)) == 1  # the batch before the bad one is delivered, then the error
        with pytest.raises(ValueError, match="frame 1 has shape \\(10, 10\\)"):
            next(results)
    results = det.predict_stream([[frame]] * 3)
    assert len(next(results)) == 1
    det.close()
    with pytest.raises(Y9Error, match="closed during predict_stream"):
        next(results)
    with pytest.raises(Y9Error, match="closed"):
        det.predict_stream([[frame]])


def test_benchmark_stream_mode(checkpoint, tmp_path):
    # photos: the trained model finds objects in them
    a, b = (cv2.resize(cv2.imread(str(p)), (200, 120)) for p in IMGS)
    frames = [a, b, np.ascontiguousarray(a[:, ::-1])]
    kw = dict(batch_sizes=(1, 3), iters=4, warmup=1, frames=frames, device="cpu", imgsz=128, conf=0.01)
    plain = benchmark(checkpoint, **kw)
    res = benchmark(checkpoint, stream=True, **kw)
    for p, s in zip(plain.cases, res.cases):
        assert (p.mode, s.mode) == ("predict", "stream")
        assert set(s.stages) == {"pre", "infer", "post", "e2e"} and s.img_per_s > 0
        assert s.stages["e2e"].p50 > 0 and s.stages["infer"].p50 > 0
        assert s.detections_per_image == p.detections_per_image > 0  # the same detections
    back = BenchmarkResult.load(res.save(tmp_path / "s.json"))
    assert [c.mode for c in back.cases] == ["stream", "stream"]
    assert compare(res, plain) == []  # a stream case is never compared with a predict case
    assert len(compare(res, back)) == 2 * 6
