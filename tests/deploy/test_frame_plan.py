"""The host frame plan (``y9deploy.runtime.frame_plan``) gives what the host pipeline's ``run`` gives, bit for bit.

``Detector.predict(frame)`` of one frame with the Detector's own options runs the plan of the frame's size; a
list of frames takes the pipeline's ``run`` (``prepare``, ``post.runner``, ``post.host.to_detections``), which
the parity tests compare with PyTorch and the end-to-end model. Here the two ways meet on the embedded model: frames
that are resized, already the input size, thin; per-class thresholds, a class filter, class-agnostic NMS, a small
``max_det``. ``frame_pre`` alone is compared with ``prepare`` in float32 and float16.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.deploy.embedded import IMGSZ


def _frames(coco8) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    made = [(IMGSZ, IMGSZ), (9, 700)]  # besides a landscape and a portrait photo: the input size (no resize), thin
    return [coco8[0].frame, coco8[6].frame] + [rng.integers(0, 256, (*hw, 3), np.uint8) for hw in made]


def _same(a, b) -> bool:
    return all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in ((a.xyxy, b.xyxy), (a.confidence, b.confidence), (a.class_id, b.class_id))
    ) and list(a.names) == list(b.names)


@pytest.mark.slow  # about ten predictions a case on the CPU
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"conf": np.linspace(0.05, 0.4, 80), "classes": [0, 17, 45, 49, 50, 58], "iou": 0.6, "agnostic": True, "max_det": 3},
    ],
    ids=["defaults", "per-class-classes-agnostic-max_det"],
)
def test_a_planned_frame_gives_the_detections_of_the_pipeline_run(embedded_export, coco8, options):
    from y9deploy import Detector

    frames = _frames(coco8)
    with Detector(embedded_export(IMGSZ), device="cpu", **options) as det:
        run = [det.predict([f])[0] for f in frames]  # a list: the pipeline's run
        copies = [f.copy() for f in frames]
        first = [det.predict(f) for f in frames]  # one frame: its plan, built on the first frame of each size
        kept = [(d.xyxy.copy(), d.confidence.copy()) for d in first]
        again = [det.predict(f) for f in frames[:2]]  # the plans kept, reused
    assert sum(len(d) for d in run) >= 4, "too few detections for the comparison to prove much"
    for k, (r, a) in enumerate(zip(run, first)):
        assert _same(r, a), f"frame {k} {frames[k].shape}: plan {a} vs run {r}"
    assert all(_same(r, b) for r, b in zip(run, again))
    for k, (d, (xyxy, conf)) in enumerate(zip(first, kept)):  # later frames wrote nothing into earlier results
        assert np.array_equal(d.xyxy, xyxy) and np.array_equal(d.confidence, conf), k
    assert all(np.array_equal(f, c) for f, c in zip(frames, copies)), "a frame was written to"


def test_a_planned_frame_is_checked_like_any_other(embedded_export):
    from y9deploy import Detector

    with Detector(embedded_export(IMGSZ), device="cpu") as det:
        det.predict(np.zeros((50, 60, 3), np.uint8))
        with pytest.raises(TypeError, match="frame 0 has dtype float32"):
            det.predict(np.zeros((50, 60, 3), np.float32))
        with pytest.raises(ValueError, match="4 channels"):
            det.predict(np.zeros((50, 60, 4), np.uint8))
        with pytest.raises(ValueError, match="too thin"):
            det.predict(np.zeros((1, 2000, 3), np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    "hw, imgsz, settings",
    [
        ((480, 640), (320, 320), {}),
        ((320, 320), (320, 320), {}),
        ((100, 77), (320, 256), {"scaleup": False}),
        ((333, 91), (256, 320), {"color": (3, 114, 250)}),
    ],
)
def test_frame_pre_fills_what_prepare_gives(dtype, hw, imgsz, settings):
    from y9deploy.pre.host import frame_pre, prepare

    rng = np.random.default_rng(sum(hw))
    frames = [rng.integers(0, 256, (*hw, 3), np.uint8) for _ in range(3)]
    blob = np.full((2, 3, *imgsz), 7, dtype)  # a static batch of 2: frames go to blob[0]
    planes = [np.empty(imgsz, np.uint8) for _ in range(3)]
    pre = frame_pre(frames[0], imgsz, blob, planes, **settings)
    assert pre is not None and pre.blob is blob
    for frame in frames:  # one plan, several frames: the padding painted once stays right
        pre.load(frame)
        for step in pre.steps:
            step()
        want, (info,) = prepare([frame], imgsz, dtype=dtype, **settings)
        assert info == pre.info and blob[0].tobytes() == want[0].tobytes()
    assert (blob[1] == 7).all()
