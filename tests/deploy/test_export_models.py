"""Issue 3's Done-when at 640: the embedded default model (trained weights; issue 11) static, dynamic batch (which
also holds the dynamic-batch facts test_export_onnx checked at 160), end2end against host decode + NMS, an
ahead-of-time sm89 engine, the end2end refusal; and yolov9-c (the official fixture weights: the dual architecture,
re-parameterized on export; at 160, calibrated there). The 384x640 export is test_export_onnx's static rectangular
one.

yolov9-c's BatchNorm statistics are re-estimated on real images (see tests/deploy/export_models.py) and it is
checked on letterboxed photos on which its float32 rounding stays small. Each test is self-contained
(``pytest -n 2`` may run them in different processes).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conftest import y9_output
from tests.deploy.embedded import COCO8, anchors, embedded_model_path
from tests.deploy.export_models import calibrated_model, inputs_for, letterboxed, rel_diff, torch_out
from y9core.errors import EngineMismatchError
from y9deploy.engine.manifest import check_engine_for_host, read_manifest
from y9deploy.export.metadata import LETTERBOX, read_metadata
from y9deploy.export.onnx_export import export_onnx_report
from y9deploy.postprocess import postprocess

pytestmark = pytest.mark.slow
RTOL = 1e-3


def _session(path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _dims(vi) -> list:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]


_y9 = y9_output  # the command line, in this process


@lru_cache(maxsize=1)
def _embedded():
    """The embedded model (float32, eval). Shared between tests: never modify it (export_onnx works on a copy)."""
    from y9train.checkpoint import load_checkpoint

    return load_checkpoint(embedded_model_path())


def _model_and_inputs(name: str, hw: tuple[int, int]):
    """("embedded" or a fixture architecture) -> (model, float32 [4, 3, h, w] letterboxed photos)."""
    if name == "embedded":
        return _embedded(), letterboxed([COCO8[i] for i in (1, 4, 5, 7)], hw)  # giraffes, people, a dog, ...
    return calibrated_model(name, max(hw)), inputs_for(name, hw)


def _check_static(name: str, path, size: int = 640, torch_ref=None) -> None:
    """The static ``size`` x ``size`` export of ``name`` at ``path``: checker, shapes, node counts, parity, metadata.
    ``torch_ref``: the original torch model's output on the second photo when the caller already has it."""
    model, real640 = _model_and_inputs(name, (size, size))
    report = export_onnx_report(model, path, imgsz=size, check_input=real640[:1])
    graph_model = onnx.load(str(report.path))
    onnx.checker.check_model(graph_model, full_check=True)
    graph = graph_model.graph
    assert _dims(graph.input[0]) == [1, 3, size, size] and _dims(graph.output[0]) == [1, 84, anchors(size)]
    assert report.nodes_simplified <= report.nodes_raw and len(graph.node) == report.nodes_simplified
    assert report.model == {"embedded": model.name, "yolov9-c": "gelan-c"}[name]  # auxiliary branch dropped
    assert report.parity[0].passed and report.parity[0].box_rel <= RTOL
    # onnxruntime vs the ORIGINAL torch model (yolov9-c: before re-parameterization) on another photo
    x = real640[1:2]
    ref = torch_out(model, x) if torch_ref is None else torch_ref
    box, score = rel_diff(_session(report.path).run(["output0"], {"images": x})[0], ref)
    assert box <= RTOL and score <= RTOL, (box, score)
    meta = read_metadata(report.path)
    assert meta.names == model.names and meta.stride == [8.0, 16.0, 32.0] and meta.imgsz == (size, size)
    assert meta.letterbox == LETTERBOX and meta.model == report.model and len(meta.source_sha256) == 64
    assert meta.y9_version and not (meta.end2end or meta.dynamic_batch or meta.half)


def _check_engine(engine, model: str, batch: list[int], size: int = 640) -> None:
    m = read_manifest(engine)
    assert (m.flavour, m.compute_capability, m.precision, m.batch) == ("tensorrt_rtx", "sm89", "fp16", batch)
    b = -1 if batch[0] != batch[2] else batch[0]
    assert m.inputs == [{"name": "images", "shape": [b, 3, size, size], "dtype": "float32"}]
    assert m.outputs == [{"name": "output0", "shape": [b, 84, anchors(size)], "dtype": "float32"}]
    assert m.onnx_metadata["model"] == model and m.engine_bytes == engine.stat().st_size > 1_000_000
    if m.ahead_of_time:  # this machine has no sm89 GPU: loading must say so
        with pytest.raises(EngineMismatchError, match=r"built for sm89 .*(no NVIDIA GPU|this GPU is sm)"):
            check_engine_for_host(engine)


def test_embedded_static_dynamic_and_sm89_engine(tmp_path):
    model, real640 = _model_and_inputs("embedded", (640, 640))
    torch4 = torch_out(model, real640)  # the torch model on the four photos, once: the static and dynamic checks' reference
    _check_static("embedded", tmp_path / "gs.onnx", torch_ref=torch4[1:2])
    # dynamic batch: symbolic batch, fixed H and W, equal to torch at batch 1 and 4
    dyn = export_onnx_report(model, tmp_path / "gs-dyn.onnx", dynamic_batch=True, imgsz=640, check_input=real640[:2])
    graph = onnx.load(str(dyn.path)).graph
    assert isinstance(_dims(graph.input[0])[0], str) and _dims(graph.input[0])[1:] == [3, 640, 640]
    assert isinstance(_dims(graph.output[0])[0], str) and _dims(graph.output[0])[1:] == [84, 8400]
    assert dyn.parity[0].batch == 2 and read_metadata(dyn.path).dynamic_batch  # checked at another batch than traced
    sess = _session(dyn.path)
    for batch in (1, 4):
        x = real640[:batch]
        got = sess.run(["output0"], {"images": x})[0]
        assert got.shape == (batch, 84, 8400)
        box, score = rel_diff(got, torch4[:batch])
        assert box <= RTOL and score <= RTOL, (batch, box, score)
    # the command, through the real CLI
    pytest.importorskip("tensorrt_rtx")
    engine = tmp_path / "gs.engine"
    res = _y9(
        "build-engine", str(dyn.path), "-o", str(engine), "--fp16", "--batch", "1:4:8", "--target", "sm89"
    )
    assert res.returncode == 0, res.stderr
    assert "sm89 ahead of time" in res.stdout
    _check_engine(engine, model.name, [1, 4, 8])


def test_yolov9_c_static_and_sm89_engine_after_reparam(tmp_path):
    """At 160 (the 640 export's shapes are checked on the embedded model above): the re-parameterization and the
    big model are what this adds, at a sixteenth of the pixels."""
    _check_static("yolov9-c", tmp_path / "yc.onnx", 160)
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine

    _check_engine(build_engine(tmp_path / "yc.onnx", target="sm89"), "gelan-c", [1, 1, 1], 160)


def test_end2end_equals_host_decode_and_nms_and_is_refused_by_rtx(embedded_export, tmp_path):
    """The embedded model's own size (416); the dynamic-batch end-to-end export of the run (``embedded_export``,
    the one test_detector_parity and test_model_facts use)."""
    _, real640 = _model_and_inputs("embedded", (416, 416))
    path = embedded_export(dynamic_batch=True, end2end=True)
    meta = read_metadata(path)
    assert meta.end2end and meta.dynamic_batch and meta.nms_defaults["max_output_boxes"] == 300
    model = onnx.load(str(path))
    # expose the raw output0 too, so that the host runs on exactly the same numbers
    model.graph.output.append(onnx.helper.make_tensor_value_info("output0", onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = ["num_dets", "boxes", "scores", "classes", "output0"]
    x = real640[:2]
    runs = {
        "defaults": ({}, dict(conf=0.25, iou=0.45)),
        "runtime": (
            {"score_threshold": np.array([0.4], np.float32), "iou_threshold": np.array([0.3], np.float32)},
            dict(conf=0.4, iou=0.3),
        ),
    }
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
    # TensorRT-RTX cannot build NonMaxSuppression: the command refuses with one sentence
    pytest.importorskip("tensorrt_rtx")
    engine = tmp_path / "e2e.engine"
    res = _y9("build-engine", str(path), "-o", str(engine), "--fp16", "--batch", "1:4:8", "--target", "sm89")
    assert res.returncode == 2 and not engine.exists()
    assert "NonMaxSuppression" in res.stderr and "export without --end2end" in res.stderr
