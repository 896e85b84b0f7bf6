"""Issue 4's parity check, on trained weights (issue 11): the embedded default model gives the same detections
through ``Detector(".pt")`` (PyTorch), ``Detector(".onnx")`` (ONNX Runtime) and the end-to-end ONNX (NMS in
the graph) on the eight coco8 images, at IMGSZ, and the same raw outputs; its FP16 export stays close.

The embedded model is trained, so its outputs are well conditioned: backends differ by float32 rounding only
(measured on the real model: well under 1e-2 px and 1e-5 in score), on any x86-64 CPU. The tolerances below
leave a wide margin above that and still catch any real difference (a wrong letterbox, decode or NMS moves
boxes by pixels). A detection scoring within ``EDGE`` of the threshold may be missing from the other backend
(rounding can move it across); every other one must match one to one.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.deploy.embedded import ANCHORS, IMGSZ, box_iou, unmatched

pytestmark = pytest.mark.slow
CONF = 0.25
EDGE = 1e-3
BOX_PX, SCORE = 0.1, 1e-4  # frame pixels (the frames are ~2x the 320 input), score units


def _recording(backend, calls: list) -> None:
    """Make ``backend.infer`` also append (its input, its output0) to ``calls``: the raw numbers of a real run, seen
    on their way (nothing replaced)."""
    infer = backend.infer

    def recorded(blob, *args, **kwargs):
        out = infer(blob, *args, **kwargs)
        calls.append((np.array(blob), np.array(out["output0"])))
        return out

    backend.infer = recorded


@pytest.fixture(scope="module")
def detections(embedded_pt, embedded_export, coco8):
    """Each path's detections of the eight frames, its (backend, end2end, imgsz), and for "pt" and "onnx" the raw
    network inputs and outputs of those runs (``<key>_raw``: a list of (blob, output0), one per backend call)."""
    from y9deploy import Detector

    paths = {"pt": embedded_pt, "onnx": embedded_export(), "e2e": embedded_export(dynamic_batch=True, end2end=True)}
    frames = [im.frame for im in coco8]
    out = {}
    for key, path in paths.items():
        with Detector(path, conf=CONF, device="cpu", imgsz=IMGSZ if key == "pt" else None) as det:
            if key != "e2e":
                _recording(det.backend, out.setdefault(key + "_raw", []))
            out[key] = det.predict(frames)
            out[key + "_backend"] = (det.backend.name, det.end2end, det.imgsz)
    return out


@pytest.mark.parametrize("other", ["onnx", "e2e"])
def test_same_detections_as_pt(coco8, detections, other):
    assert detections["pt_backend"] == ("torch", False, (IMGSZ, IMGSZ))
    assert detections[other + "_backend"] == ("onnxruntime", other == "e2e", (IMGSZ, IMGSZ))
    for im, a, b in zip(coco8, detections["pt"], detections[other]):
        name = im.path.name
        tol = dict(box_px=BOX_PX, score=SCORE, skip_below=CONF + EDGE)
        assert not unmatched(a, b, **tol), f"{name}: .pt detections missing from {other}: {a} vs {b}"
        assert not unmatched(b, a, **tol), f"{name}: {other} detections missing from .pt: {b} vs {a}"
    total = sum(len(d) for d in detections["pt"])
    assert total >= 15, f"only {total} detections on the eight images: the comparison would prove little"


def test_raw_outputs_agree(coco8, detections):
    """The networks themselves: torch and onnxruntime raw outputs on every image (no NMS, no threshold), the ones
    the two Detectors of ``detections`` computed (the .pt in one batch of eight, the static-batch ONNX one image
    a call), fed the same letterboxed blob."""
    from y9deploy.pre.host import prepare

    blob, _ = prepare([im.frame for im in coco8], IMGSZ)
    (pt_in, a), onnx_runs = detections["pt_raw"][0], detections["onnx_raw"]
    assert len(detections["pt_raw"]) == 1 and len(onnx_runs) == len(blob)
    np.testing.assert_array_equal(pt_in, blob)
    np.testing.assert_array_equal(np.concatenate([x for x, _ in onnx_runs]), blob)
    b = np.concatenate([y for _, y in onnx_runs])
    assert a.shape == b.shape == (8, 84, ANCHORS)
    box, score = np.abs(a[:, :4] - b[:, :4]).max(), np.abs(a[:, 4:] - b[:, 4:]).max()
    assert box < 0.05 and score < 1e-4, (box, score)  # input pixels
    assert a[:, 4:].max() > 0.5  # a trained model: confident somewhere on every run


def test_fp16_export_stays_close(embedded_export, coco8, detections):
    """The FP16 ONNX (float16 weights, input and output): at least 90% of the confident detections of the FP32
    model are found again (same class, IoU >= 0.85, score within 0.03). FP16 rounding may let NMS keep a
    neighbouring anchor's box, hence IoU rather than pixels."""
    from y9deploy import Detector

    with Detector(embedded_export(half=True), conf=CONF) as det:
        assert det.info.half and det.backend.input_dtype == np.float16
        got = det.predict([im.frame for im in coco8])
    matched = total = 0
    for a, b in zip(detections["onnx"], got):
        for i in np.flatnonzero(a.confidence >= CONF + 0.05):
            total += 1
            if len(b):
                iou = box_iou(a.xyxy[i : i + 1], b.xyxy)[0]
                ok = (
                    (iou >= 0.85)
                    & (b.class_id == a.class_id[i])
                    & (np.abs(b.confidence - a.confidence[i]) <= 0.03)
                )
                matched += bool(ok.any())
    assert total >= 10 and matched >= 0.9 * total, (matched, total)
