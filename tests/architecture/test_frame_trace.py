"""A frame's way through ``Detector.predict`` (ONNX Runtime on the CPU, the embedded model exported to ONNX), traced
with ``sys.setprofile`` (``tests.architecture.frame_trace``): the y9 modules it crosses and the returns to a module
it had left, kept under a ceiling so that the way only gets shorter.

Measured on the same frame (tests/data/000000000009.jpg, the second call after a warm-up one):
- before issue 47 (main at 36be108): 19 modules, 44 returns;
- after: 16 modules, 23 returns (the host pipeline decides its letterbox arguments once and calls no timer that
  records nothing; the Detector's checked defaults are not checked again per call; ONNX Runtime takes a host array
  without asking whether it is a torch tensor; the post-processing rule is asked once per batch when the work is
  the runner's own, as the host pipeline's numpy outputs now always are; the host NMS of one image is one call
  into ``y9core.post.nms``).
- after issue 54's rooms: 11 modules, 12 returns (the Detector's thread guard lives in ``runtime.detector``; a host
  pipeline's post-processing runner keeps the implementation chosen when it was built and turns rows straight into
  Detections; the host decode and NMS are one module, ``y9core.post.nms``; the letterbox geometry of a frame size is
  computed once);
- after issue 54's frame plan: 5 modules, 4 returns. One frame with the Detector's own options runs the plan of its
  frame size (``runtime.frame_plan``), which the Detector itself runs: the letterbox as OpenCV and numpy calls bound
  once to reused buffers (``pre.host.frame_pre``: nothing of y9 per frame; the frame's check is the plan's key, its
  shape and dtype), then one call each into the backend (1 return), ``y9core.post.nms.decode_nms_frame`` (decode,
  NMS, the boxes mapped back by the factors ``y9core.letterbox.unmap_factors`` decided once, the scores clipped: 1)
  and ``Detections.unchecked`` (1);
- after issue 54's box module: 4 modules, 3 returns (the decode, the NMS and the IoU are one module,
  ``y9core.boxes``, whose ``decode_nms_frame`` calls nothing of y9 outside it).
"""

from __future__ import annotations

import cv2

from tests.architecture.frame_trace import trace_modules
from tests.conftest import TEST_DATA
from tests.deploy.embedded import IMGSZ

MAX_MODULES = 4
MAX_RETURNS = 3
FRAME = TEST_DATA / "000000000009.jpg"


def test_a_frame_through_detector_predict_on_onnx_takes_a_short_way(embedded_export):
    from y9deploy import Detector

    frame = cv2.imread(str(FRAME))
    assert frame is not None, FRAME
    with Detector(embedded_export(IMGSZ), device="cpu") as det:
        det.predict(frame)  # first call: lazy imports, buffers
        trace = trace_modules(lambda: det.predict(frame))
    print(trace.report())
    assert len(trace.result) > 0
    assert trace.modules[0] == "y9deploy.runtime.detector" and "y9deploy.runtime.backends.onnxruntime_backend" in trace.modules
    assert len(trace.modules) <= MAX_MODULES and trace.returns <= MAX_RETURNS, trace.report()


def test_the_tracer_counts_modules_and_returns():
    """``trace_modules`` on y9 code whose way is known: ``letterbox`` calls into nothing else of y9."""
    import numpy as np

    from y9core.letterbox import letterbox

    img = np.zeros((20, 30, 3), np.uint8)
    trace = trace_modules(lambda: letterbox(img, 32))
    assert trace.modules == ["y9core.letterbox"] and trace.returns == 0
    assert trace.result[0].shape == (32, 32, 3)
