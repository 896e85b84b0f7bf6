"""Issue 4's parity check: the fixture gelan-s weights saved as a y9 checkpoint give the same detections through
``Detector(".pt")`` (PyTorch), ``Detector(".onnx")`` (ONNX Runtime) and the end2end ONNX (NMS in the graph) on
every image of coco128/images/val, at 640.

The fixture BatchNorm statistics were calibrated on random 256x256 inputs; on real 640 photos the scores
saturate, so they are re-estimated first on these images (``reestimate_bn``). A few images still drive this
random network to scores of 1.0 (to the last float32 bit) for hundreds of anchors; when more such tied anchors
than ``max_det`` (300) survive, which 300 are kept depends on the tie order, i.e. on the last bit of each score
(one image here, 000000000397.jpg, with ~1200 tied anchors). For such a tie-dominated image only the number
of detections is compared; on every other image each detection must match one of the other backend one to
one (same class, box within 1 px, score within 1e-4). The raw outputs are compared too.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.conftest import shared_path
from tests.deploy.runtime_support import letterboxed_batch, reestimate_bn

pytestmark = pytest.mark.slow
CONF = 0.6  # leaves 6 to 120 boxes on the unsaturated images (the scores spread over ~0.55-0.65)
MAX_DET = 300
TIED = 0.999


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    from tests.train.model_fixtures import official_weights_model
    from y9deploy.export.onnx_export import export_onnx_report
    from y9train.checkpoint import save_checkpoint

    images = sorted(shared_path("datasets", "coco128", "images", "val").glob("*.jpg"))
    assert len(images) == 16
    model = official_weights_model("gelan-s")
    reestimate_bn(model, [letterboxed_batch(images, 640)])
    tmp = tmp_path_factory.mktemp("gelan_s")
    pt = save_checkpoint(model, tmp / "gs.pt")
    # check=False: the export's own parity check feeds random noise, on which this re-estimated random network
    # is chaotic; parity on the real images is what this module checks.
    onnx = export_onnx_report(pt, tmp / "gs.onnx", imgsz=640, check=False).path
    e2e = export_onnx_report(pt, tmp / "gs_e2e.onnx", imgsz=640, end2end=True, check=False).path
    frames = [cv2.imread(str(p)) for p in images]
    return {"pt": pt, "onnx": onnx, "e2e": e2e, "frames": frames, "names": [p.name for p in images]}


@pytest.fixture(scope="module")
def detections(models):
    from y9deploy import Detector

    out = {}
    for key in ("pt", "onnx", "e2e"):
        with Detector(models[key], conf=CONF, device="cpu") as det:
            out[key] = det.predict(models["frames"])
            out[key + "_backend"] = (det.backend.name, det.end2end)
    return out


def _unmatched(a, b, mask_a):
    """Indices i (where mask_a) of a's detections with no partner in b: same class, box within 1 px, score 1e-4."""
    used = np.zeros(len(b), bool)
    missing = []
    for i in np.flatnonzero(mask_a):
        d = np.abs(b.xyxy - a.xyxy[i]).max(1)
        ok = (
            (d <= 1.0)
            & (b.class_id == a.class_id[i])
            & (np.abs(b.confidence - a.confidence[i]) <= 1e-4)
            & ~used
        )
        j = np.flatnonzero(ok)
        if len(j):
            used[j[np.argmin(d[j])]] = True
        else:
            missing.append(int(i))
    return missing


@pytest.mark.parametrize("other", ["onnx", "e2e"])
def test_same_detections_as_pt(models, detections, other):
    assert detections["pt_backend"] == ("torch", False)
    assert detections[other + "_backend"] == ("onnxruntime", other == "e2e")
    compared = []
    for name, a, b in zip(models["names"], detections["pt"], detections[other]):
        assert len(a) == len(b), f"{name}: {len(a)} detections from .pt, {len(b)} from {other}"
        tie_dominated = len(a) == MAX_DET and min(a.confidence.min(), b.confidence.min()) >= TIED
        if tie_dominated:
            continue
        everything = np.ones(len(a), bool)
        assert not _unmatched(a, b, everything), f"{name}: .pt detections missing from {other}"
        assert not _unmatched(b, a, everything), f"{name}: {other} detections missing from .pt"
        compared.append(len(a))
    assert len(compared) >= 15 and np.median(compared) >= 10, compared  # tens of boxes on nearly every image


def test_raw_outputs_agree(models):
    """The networks themselves: torch and onnxruntime raw outputs on every image (no NMS, no ties)."""
    from y9deploy import Detector
    from y9deploy.preprocess import prepare

    picked = [2, 3, 8, 14]  # the four images whose scores saturate: the most sensitive ones
    blob, _ = prepare([models["frames"][i] for i in picked], 640)
    with Detector(models["pt"], device="cpu") as dp, Detector(models["onnx"], device="cpu") as do:
        a = dp.backend.infer(blob)["output0"]
        b = np.concatenate(
            [do.backend.infer(blob[k : k + 1])["output0"] for k in range(len(blob))]
        )  # batch 1
    box, score = np.abs(a[:, :4] - b[:, :4]).max(), np.abs(a[:, 4:] - b[:, 4:]).max()
    assert box < 0.5 and score < 1e-3, (box, score)  # measured: 0.16 px, on these chaotic images
