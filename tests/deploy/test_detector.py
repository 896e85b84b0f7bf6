"""Detector on the CPU with ONNX Runtime: against a slow reference pipeline, batching, overrides, lifecycle."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx, reference_detect
from y9core.errors import Y9Error
from y9deploy import Detections, Detector

IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]
HW = (96, 128)


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory) -> Path:
    return export_tiny_onnx(tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=HW, dynamic_batch=True)


@pytest.fixture(scope="module")
def tiny_static2(tmp_path_factory) -> Path:
    return export_tiny_onnx(tmp_path_factory.mktemp("tiny2") / "tiny_b2.onnx", imgsz=HW, batch=2)


@pytest.fixture(scope="module")
def frames() -> list[np.ndarray]:
    return [cv2.imread(str(p)) for p in IMAGES]


def assert_same(a: Detections, b: Detections, atol: float = 1e-3) -> None:
    assert len(a) == len(b)
    np.testing.assert_allclose(a.xyxy, b.xyxy, atol=atol)
    np.testing.assert_allclose(a.confidence, b.confidence, atol=1e-6)
    np.testing.assert_array_equal(a.class_id, b.class_id)


def sorted_rows(xyxy, conf, cls) -> np.ndarray:
    rows = np.column_stack([xyxy, conf, cls]).astype(np.float64)
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("conf,iou", [(0.5, 0.45), (0.6, 0.3)])
def test_matches_slow_reference_pipeline(tiny_onnx, frames, conf, iou):
    import onnxruntime as ort

    session = ort.InferenceSession(str(tiny_onnx), providers=["CPUExecutionProvider"])
    with Detector(tiny_onnx, conf=conf, iou=iou) as det:
        assert det.imgsz == HW and det.names == ["c0", "c1", "c2"] and det.backend.name == "onnxruntime"
        for frame in frames:
            got = det.predict(frame)
            boxes, scores, classes = reference_detect(session, frame, HW, conf, iou)
            assert len(got) > 10, "the tiny net should leave tens of boxes at this threshold"
            assert np.all(np.diff(got.confidence) <= 0), "rows are sorted by descending score"
            np.testing.assert_allclose(
                sorted_rows(got.xyxy, got.confidence, got.class_id),
                sorted_rows(boxes, scores, classes),
                atol=2e-3,
            )


def test_batch_forms_equal_single_calls(tiny_onnx, frames):
    flipped = np.ascontiguousarray(frames[0][:, ::-1])
    with Detector(tiny_onnx, conf=0.5) as det:
        singles = [det.predict(f) for f in (frames[0], frames[1], flipped)]
        as_list = det.predict([frames[0], frames[1], flipped])
        mixed = det.predict([IMAGES[0], frames[1], flipped])
        assert isinstance(as_list, list) and len(as_list) == 3
        for a, b, c in zip(singles, as_list, mixed):
            assert_same(a, b)
            assert_same(a, c)
        assert_same(det.predict(IMAGES[1]), singles[1])
        stack = det.predict(np.stack([frames[0], frames[0]]))  # a 4-D batch gives a list
        assert isinstance(stack, list) and len(stack) == 2
        assert_same(stack[1], singles[0])


def test_static_batch_model_pads_and_splits(tiny_static2, tiny_onnx, frames):
    """A static batch-2 model gets 3 frames: one full call and one padded call; results as batch-1 calls."""
    with Detector(tiny_static2, conf=0.5) as det2, Detector(tiny_onnx, conf=0.5) as det1:
        assert det2.backend.batch_range == (2, 2) and det1.backend.batch_range[0] == 1
        three = [frames[0], frames[1], frames[0]]
        for a, b in zip(det2.predict(three), det1.predict(three)):
            assert_same(a, b, atol=1e-3)


def test_boxes_land_in_frame_pixels(tiny_onnx):
    """A frame that needs no resize gives boxes in its own pixels; clipped to the frame."""
    frame = np.random.default_rng(0).integers(0, 256, (*HW, 3), dtype=np.uint8)
    big = cv2.resize(frame, (HW[1] * 4, HW[0] * 4), interpolation=cv2.INTER_NEAREST)
    with Detector(tiny_onnx, conf=0.5) as det:
        small = det.predict(frame)
        assert len(small) > 0
        assert small.xyxy.min() >= 0 and small.xyxy[:, 2].max() <= HW[1] and small.xyxy[:, 3].max() <= HW[0]
        large = det.predict(big)
        assert large.xyxy[:, 2].max() <= HW[1] * 4 and large.xyxy[:, 3].max() <= HW[0] * 4
        assert large.xyxy[:, 2].max() > HW[1]  # really scaled back up, not left in input pixels


def test_overrides(tiny_onnx, frames):
    with Detector(tiny_onnx, conf=0.5) as det:
        base = det.predict(frames[0])
        higher = det.predict(frames[0], conf=0.55)
        assert 0 < len(higher) < len(base) and higher.confidence.min() > 0.55
        assert len(det.predict(frames[0])) == len(base), "an override lasts one call"
        only1 = det.predict(frames[0], classes=[1])
        assert len(only1) > 0 and set(only1.class_id.tolist()) == {1}
        assert len(det.predict(frames[0], max_det=5)) == 5
        agn = det.predict(frames[0], agnostic=True)
        assert len(agn) <= len(base)
        per_class = det.predict(frames[0], conf=[0.5, 0.99, 0.99])
        assert set(per_class.class_id.tolist()) <= {0}
        looser = det.predict(frames[0], iou=0.9)
        assert len(looser) > len(base)


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"conf": 1.5}, ValueError),
        ({"conf": "high"}, TypeError),
        ({"iou": -0.1}, ValueError),
        ({"max_det": 0}, ValueError),
        ({"classes": [7]}, ValueError),
        ({"conf": [0.5, 0.5]}, ValueError),
        ({"agnostic": "yes"}, TypeError),
        ({"confidence": 0.3}, TypeError),
    ],
)
def test_bad_overrides(tiny_onnx, frames, kwargs, error):
    with Detector(tiny_onnx) as det, pytest.raises(error) as info:
        det.predict(frames[0], **kwargs)
    assert str(info.value).endswith(".")


def test_bad_constructor_options(tiny_onnx):
    with pytest.raises(ValueError, match="conf"):
        Detector(tiny_onnx, conf=2.0)
    with pytest.raises(ValueError, match="imgsz"):
        Detector(tiny_onnx, imgsz=640)
    with pytest.raises(ValueError, match="preprocess"):
        Detector(tiny_onnx, preprocess="tpu")
    with pytest.raises(ValueError, match="preprocess='gpu'"):
        Detector(tiny_onnx, device="cpu", preprocess="gpu")
    with pytest.raises(ValueError, match="device"):
        Detector(tiny_onnx, device="tpu:0")


def test_lifecycle(tiny_onnx, frames):
    det = Detector(tiny_onnx)
    det.warmup(batch=2)
    assert "onnxruntime" in repr(det)
    with det:
        assert len(det.predict(frames[0])) >= 0
    with pytest.raises(Y9Error, match="closed"):
        det.predict(frames[0])
    det.close()  # idempotent


def test_gpu_pipeline_code_on_cpu_tensors(tiny_onnx, frames):
    """The GPU path (torch letterbox, torch tensors through the backend) run on the CPU: same detections."""
    pytest.importorskip("torch")
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    with Detector(tiny_onnx, conf=0.5) as det:
        ref = det.predict(frames)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="cpu", workers=2)
        for a, b in zip(ref, det.predict(frames)):  # the same OpenCV letterbox, split over threads
            assert_same(a, b)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="gpu")
        for a, b in zip(ref, det.predict(frames)):  # torch letterbox: pixels within one grey level
            assert len(a) == len(b)
            dist = np.abs(a.xyxy[:, None, :] - b.xyxy[None]).max(2)
            assert dist.min(1).max() < 0.05
