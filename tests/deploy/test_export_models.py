"""Issue 3's Done-when, with the official fixture weights: gelan-s and yolov9-c at 640, dynamic batch,
384x640, end2end against host decode + NMS, ahead-of-time sm89 engines, the end2end refusal.

The networks get BatchNorm statistics re-estimated on real images (see tests/deploy/export_models.py) and
are checked on letterboxed photos, where they behave like trained networks.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.deploy.export_models import calibrated_model, inputs_for, rel_diff, torch_out
from y9deploy.export.metadata import LETTERBOX, read_metadata
from y9deploy.export.onnx_export import export_onnx_report
from y9deploy.postprocess import postprocess

pytestmark = pytest.mark.slow
RTOL = 1e-3


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("exports")


def _session(path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _dims(vi) -> list:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]


@pytest.fixture(scope="module")
def gs_dynamic(out):
    """gelan-s, 640, dynamic batch (used by the dynamic-batch and engine tests)."""
    x = inputs_for("gelan-s", (640, 640))[:2]
    return export_onnx_report(
        calibrated_model("gelan-s"), out / "gs-dyn.onnx", dynamic_batch=True, check_input=x
    )


@pytest.mark.parametrize("name", ["gelan-s", "yolov9-c"])
def test_static_640(name, out):
    model, real640 = calibrated_model(name), inputs_for(name, (640, 640))
    report = export_onnx_report(model, out / f"{name}.onnx", imgsz=640, check_input=real640[:1])
    onnx_model = onnx.load(str(report.path))
    onnx.checker.check_model(onnx_model, full_check=True)
    assert _dims(onnx_model.graph.input[0]) == [1, 3, 640, 640] and _dims(onnx_model.graph.output[0]) == [
        1,
        84,
        8400,
    ]
    assert (
        report.nodes_simplified <= report.nodes_raw and len(onnx_model.graph.node) == report.nodes_simplified
    )
    assert report.model == ("gelan-c" if name == "yolov9-c" else "gelan-s")  # auxiliary branch dropped
    assert report.parity[0].passed and report.parity[0].box_rel <= RTOL
    # onnxruntime vs the ORIGINAL torch model (yolov9-c: before re-parameterization) on another photo
    x = real640[1:2]
    box, score = rel_diff(_session(report.path).run(["output0"], {"images": x})[0], torch_out(model, x))
    assert box <= RTOL and score <= RTOL
    meta = read_metadata(report.path)
    assert meta.names == model.names and meta.stride == [8.0, 16.0, 32.0] and meta.imgsz == (640, 640)
    assert meta.letterbox == LETTERBOX and meta.model == report.model and len(meta.source_sha256) == 64
    assert meta.y9_version and not (meta.end2end or meta.dynamic_batch or meta.half)


def test_dynamic_batch_1_and_4(gs_dynamic):
    name = "gelan-s"
    report, real640 = gs_dynamic, inputs_for(name, (640, 640))
    graph = onnx.load(str(report.path)).graph
    assert isinstance(_dims(graph.input[0])[0], str) and _dims(graph.input[0])[1:] == [3, 640, 640]
    assert isinstance(_dims(graph.output[0])[0], str) and _dims(graph.output[0])[1:] == [84, 8400]
    sess, model = _session(report.path), calibrated_model(name)
    for batch in (1, 4):
        x = real640[:batch]
        got, ref = sess.run(["output0"], {"images": x})[0], torch_out(model, x)
        assert got.shape == (batch, 84, 8400)
        box, score = rel_diff(got, ref)
        assert box <= RTOL and score <= RTOL, (batch, box, score)


def test_rectangular_384x640(out):
    model = calibrated_model("gelan-s")
    x = inputs_for("gelan-s", (384, 640))[:2]
    report = export_onnx_report(model, out / "gs-384x640.onnx", imgsz=(384, 640), check_input=x[:1])
    assert read_metadata(report.path).imgsz == (384, 640)
    got = _session(report.path).run(["output0"], {"images": x[1:]})[0]
    assert got.shape == (1, 84, 48 * 80 + 24 * 40 + 12 * 20)
    box, score = rel_diff(got, torch_out(model, x[1:]))
    assert box <= RTOL and score <= RTOL


def test_end2end_equals_host_decode_and_nms(out):
    real640 = inputs_for("gelan-s", (640, 640))
    report = export_onnx_report(
        calibrated_model("gelan-s"),
        out / "gs-e2e.onnx",
        dynamic_batch=True,
        end2end=True,
        check_input=real640[:2],
    )
    model = onnx.load(str(report.path))
    assert (
        read_metadata(report.path).end2end
        and read_metadata(report.path).nms_defaults["max_output_boxes"] == 300
    )
    # expose the raw output0 too, so that the host runs on exactly the same numbers
    model.graph.output.append(onnx.helper.make_tensor_value_info("output0", onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = ["num_dets", "boxes", "scores", "classes", "output0"]
    x = real640[:2]
    runs = {
        "defaults": ({}, dict(conf=0.25, iou=0.45)),
        "runtime": ({"score_threshold": np.array([0.6], np.float32), "iou_threshold": np.array([0.3], np.float32)},
                    dict(conf=0.6, iou=0.3)),
    }  # fmt: skip
    counts = {}
    for key, (feeds, host_args) in runs.items():
        num, boxes, scores, classes, raw = sess.run(names, {"images": x, **feeds})
        host = postprocess(raw, max_det=300, **host_args)
        counts[key] = num[:, 0].tolist()
        for b in range(2):
            n = int(num[b, 0])
            assert n == len(host[b]) > 0
            np.testing.assert_allclose(boxes[b, :n], host[b][:, :4], atol=1e-3)
            np.testing.assert_allclose(scores[b, :n], host[b][:, 4], atol=1e-6)
            np.testing.assert_array_equal(classes[b, :n], host[b][:, 5].astype(np.int32))
    assert counts["runtime"] != counts["defaults"]  # new thresholds at run time changed the result


def _y9(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "y9deploy.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_aot_sm89_engines_and_manifests(gs_dynamic, out):
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine
    from y9deploy.engine.manifest import check_engine_for_host, read_manifest
    from y9deploy.errors import EngineMismatchError

    gs = gs_dynamic.path
    res = _y9(
        "build-engine",
        str(gs),
        "-o",
        str(out / "gs.engine"),
        "--fp16",
        "--batch",
        "1:4:8",
        "--target",
        "sm89",
    )
    assert res.returncode == 0, res.stderr
    assert "sm89 ahead of time" in res.stdout
    yc_onnx = out / "yolov9-c.onnx"  # the re-parameterized static export of test_static_640
    if not yc_onnx.exists():
        pytest.skip("needs the yolov9-c export of test_static_640")
    yc = build_engine(yc_onnx, out / "yc.engine", target="sm89")
    for engine, model, batch in ((out / "gs.engine", "gelan-s", [1, 4, 8]), (yc, "gelan-c", [1, 1, 1])):
        m = read_manifest(engine)
        assert (m.flavour, m.compute_capability, m.precision, m.batch) == (
            "tensorrt_rtx",
            "sm89",
            "fp16",
            batch,
        )
        dyn = -1 if batch[0] != batch[2] else 1
        assert m.inputs[0] == {"name": "images", "shape": [dyn, 3, 640, 640], "dtype": "float32"}
        assert m.outputs[0] == {"name": "output0", "shape": [dyn, 84, 8400], "dtype": "float32"}
        assert m.onnx_metadata["model"] == model and m.engine_bytes == engine.stat().st_size > 1_000_000
        if m.ahead_of_time:  # this machine has no sm89 GPU: loading must say so
            with pytest.raises(EngineMismatchError, match=r"built for sm89 .*(no NVIDIA GPU|this GPU is sm)"):
                check_engine_for_host(engine)


def test_end2end_is_refused_by_build_engine(out):
    pytest.importorskip("tensorrt_rtx")
    e2e = out / "gs-e2e.onnx"
    if not e2e.exists():
        pytest.skip("needs the end2end export of test_end2end_equals_host_decode_and_nms")
    res = _y9(
        "build-engine",
        str(e2e),
        "-o",
        str(out / "e2e.engine"),
        "--fp16",
        "--batch",
        "1:4:8",
        "--target",
        "sm89",
    )
    assert res.returncode == 2 and not (out / "e2e.engine").exists()
    assert "NonMaxSuppression" in res.stderr and "export without --end2end" in res.stderr
