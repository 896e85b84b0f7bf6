"""The runtime's own scores above 1 (a saturated sigmoid plus rounding: FP16, fused graphs, accelerators) are
clipped to [0, 1] before its Detections are built, through every backend on the CPU (ONNX Runtime: raw and
end-to-end outputs; torch: a .pt checkpoint); Detections built from user data still refuse them."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from y9deploy.detections import Detections

IMAGE = TEST_DATA / "000000000036.jpg"
GAIN = 1.5  # scores above 2/3 come out above 1


def _saturate(outputs: dict, end2end: bool) -> dict:
    """The backend's own outputs with every score multiplied by GAIN (numpy or torch, as the backend returns them)."""
    out = dict(outputs)
    if end2end:
        out["scores"] = out["scores"] * GAIN
        return out
    key = next(iter(out))
    pred = out[key]
    pred = pred.clone() if hasattr(pred, "clone") else np.array(pred, copy=True)
    pred[:, 4:] *= GAIN
    out[key] = pred
    return out


@pytest.fixture(scope="module")
def models(embedded_pt, embedded_export):
    return {"torch": embedded_pt, "onnxruntime": embedded_export(), "onnxruntime-end2end": embedded_export(
        end2end=True)}  # fmt: skip


@pytest.mark.parametrize("which", ["torch", "onnxruntime", "onnxruntime-end2end"])
def test_saturated_scores_are_clipped_by_the_runtime(models, which):
    from y9deploy.runtime.detector import Detector

    frame = cv2.imread(str(IMAGE))
    with Detector(models[which], conf=0.25) as det:
        plain = det.predict(frame)
        assert len(plain) and float(plain.confidence.max()) > 2 / 3  # some scores will saturate
        infer = det.backend.infer
        det.backend.infer = lambda batch, extras=None: _saturate(infer(batch, extras), which.endswith("end2end"))
        dets = det.predict(frame)
    h, w = frame.shape[:2]
    assert len(dets) >= len(plain)
    assert dets.confidence.dtype == np.float32
    assert float(dets.confidence.min()) >= 0.25 and float(dets.confidence.max()) == 1.0
    assert (dets.xyxy >= 0).all() and (dets.xyxy[:, [0, 2]] <= w).all() and (dets.xyxy[:, [1, 3]] <= h).all()


def test_user_built_detections_still_refuse_a_score_above_1():
    with pytest.raises(ValueError, match="confidence row 0 is 1; expected a score in"):
        Detections(np.array([[0, 0, 5, 5]], np.float32), np.array([np.nextafter(np.float32(1), 2)]), [0])
