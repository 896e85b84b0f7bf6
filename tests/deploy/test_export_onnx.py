"""export_onnx on the embedded default model (trained weights, at 160-384x640): graph, shapes, metadata, parity,
checkpoints, bad input; the official dual checkpoint against the official outputs. The dynamic batch export is
checked in test_export_models (at 640, with its engine).

Trained weights keep the network sensitive to its input and well-conditioned in float32, so the torch vs
ONNX Runtime comparisons hold on any x86-64 CPU; a default-initialised network is not useful here (its output
hardly depends on the input, so any comparison would pass).
"""

from __future__ import annotations

import copy
import hashlib
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import typer
from torch import nn
from typer.testing import CliRunner

from y9core.errors import Y9Error
from y9deploy.export.metadata import LETTERBOX, read_metadata
from y9deploy.export.onnx_export import export_onnx, export_onnx_report, parse_imgsz


@pytest.fixture(scope="module")
def small_model(embedded_pt):
    """The embedded model (float32, eval mode). Tests that change it work on a copy."""
    from y9train.checkpoint import load_checkpoint

    return load_checkpoint(embedded_pt)


def _run(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(["output0"], {"images": x})[0]


def _torch(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def _dims(vi):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]


def test_static_rectangular_export(small_model, coco8, tmp_path):
    """384x640 (issue 3's rectangular size): graph, shapes, fused and simplified, metadata, onnxruntime against the
    unfused torch model on a random input and on a letterboxed photo, the caller's model untouched."""
    from y9deploy.pre.host import prepare

    before = {k: v.clone() for k, v in small_model.state_dict().items()}
    had_bn = any(isinstance(m, nn.BatchNorm2d) for m in small_model.modules())
    report = export_onnx_report(small_model, tmp_path / "m.onnx", imgsz=(384, 640))
    path = report.path
    assert path == tmp_path / "m.onnx" and not list(tmp_path.glob("*.tmp"))
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    anchors = 48 * 80 + 24 * 40 + 12 * 20
    assert [i.name for i in model.graph.input] == ["images"] and _dims(model.graph.input[0]) == [1, 3, 384, 640]
    assert [o.name for o in model.graph.output] == ["output0"] and _dims(model.graph.output[0]) == [1, 84, anchors]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    # fused and simplified: no BatchNormalization left, never more nodes than the raw export
    assert report.simplified and report.nodes_simplified <= report.nodes_raw == report.nodes_raw
    assert not [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    assert len(model.graph.node) == report.nodes_simplified
    assert report.parity[0].passed and report.parity[0].rtol == 1e-3
    # onnxruntime equals the (unfused) torch model on another input, and on a photo letterboxed to 384x640
    x = np.random.default_rng(5).random((1, 3, 384, 640), dtype=np.float32)
    got, ref = _run(path, x), _torch(small_model, x)
    assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()
    photo, _ = prepare([coco8[4].frame], (384, 640))
    got, ref = _run(path, photo), _torch(small_model, photo)
    assert got.shape == (1, 84, anchors)
    box = np.abs(got[:, :4] - ref[:, :4]).max() / np.abs(ref[:, :4]).max()
    assert box <= 1e-3 and np.abs(got[:, 4:] - ref[:, 4:]).max() <= 1e-3, box
    # metadata
    meta = read_metadata(path)
    assert meta.names == small_model.names and len(meta.names) == 80 and meta.stride == [8.0, 16.0, 32.0]
    assert meta.imgsz == (384, 640)
    assert meta.letterbox == LETTERBOX and meta.model == small_model.name and meta.y9_version
    assert (meta.end2end, meta.dynamic_batch, meta.half) == (False, False, False)
    assert len(meta.source_sha256) == 64
    props = {p.key: p.value for p in model.metadata_props}
    assert json.loads(props["imgsz"]) == [384, 640] and props["half"] == "0"
    # the caller's model is untouched (not fused, same weights)
    assert any(isinstance(m, nn.BatchNorm2d) for m in small_model.modules()) == had_bn
    assert all(torch.equal(before[k], v) for k, v in small_model.state_dict().items())


def test_source_hash_is_the_weights_hash(small_model, tmp_path):
    from y9deploy.export.source import state_dict_sha256

    a = export_onnx_report(small_model, tmp_path / "a.onnx", imgsz=160, simplify=False, check=False)
    assert not a.simplified and a.nodes_simplified == a.nodes_raw and a.parity == []
    assert (
        a.metadata["source_sha256"]
        == state_dict_sha256(small_model)
        == state_dict_sha256(copy.deepcopy(small_model))
    )
    other = copy.deepcopy(small_model)
    with torch.no_grad():
        next(other.parameters()).view(-1)[0] += 1e-3
    assert state_dict_sha256(other) != a.metadata["source_sha256"]


def test_half_export(small_model, embedded_export, embedded_export_parity):
    """The embedded model's FP16 export of the run (``embedded_export(half=True)``, at its own 416, the one
    test_detector_parity and test_backends run)."""
    path = embedded_export(half=True)
    model = onnx.load(str(path))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    parity = embedded_export_parity(half=True)
    assert [p["rtol"] for p in parity] == [1e-3, 2e-2] and all(p["passed"] for p in parity)
    x = np.random.default_rng(9).random((1, 3, 416, 416), dtype=np.float32)
    got, ref = _run(path, x.astype(np.float16)).astype(np.float32), _torch(small_model, x)
    assert (
        got.dtype == np.float32 and np.abs(got[:, :4] - ref[:, :4]).max() <= 2e-2 * np.abs(ref[:, :4]).max()
    )
    fp32_weight_bytes = 4 * sum(p.numel() for p in small_model.parameters())
    assert read_metadata(path).half and path.stat().st_size < 0.6 * fp32_weight_bytes


def test_half_end2end_export(small_model, tmp_path, coco8):
    """FP16 raw graph + float32 NMS part: the end2end outputs equal the host postprocess of the FP16 raw output
    (two coco8 photos at 224)."""
    from y9deploy.postprocess import postprocess
    from y9deploy.pre.host import prepare

    report = export_onnx_report(
        small_model, tmp_path / "he.onnx", imgsz=224, half=True, end2end=True, dynamic_batch=True
    )
    model = onnx.load(str(report.path))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert [o.name for o in model.graph.output] == ["num_dets", "boxes", "scores", "classes"]
    meta = read_metadata(report.path)
    assert (
        meta.half
        and meta.end2end
        and meta.nms_defaults == {"score_threshold": 0.25, "iou_threshold": 0.45, "max_output_boxes": 300}
    )
    model.graph.output.append(onnx.helper.make_tensor_value_info("output0", onnx.TensorProto.FLOAT16, None))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x, _ = prepare([coco8[4].frame, coco8[5].frame], 224, dtype=np.float16)
    num, boxes, scores, classes, raw = sess.run(
        ["num_dets", "boxes", "scores", "classes", "output0"], {"images": x}
    )
    assert boxes.dtype == np.float32 and classes.dtype == np.int32
    host = postprocess(raw.astype(np.float32), conf=0.25, iou=0.45, max_det=300)
    for b in range(2):
        n = int(num[b, 0])
        assert n == len(host[b]) > 0
        # FP16 scores tie often and the order among equal scores is not defined: compare the sets of rows
        got = np.concatenate([boxes[b, :n], scores[b, :n, None], classes[b, :n, None]], 1)
        np.testing.assert_allclose(_sorted_rows(got), _sorted_rows(host[b]), atol=1e-3)


def _sorted_rows(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])]


class _TracedDifferently(nn.Module):
    """A block whose Python branch depends on the data: tracing bakes in the branch of the (zero) dummy."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        if float(x.mean()) > 0.1:
            y = y * 1.5
        return y


def test_parity_failure_fails_the_export(small_model, tmp_path):
    broken = copy.deepcopy(small_model)
    broken.model[0] = _TracedDifferently(broken.model[0])  # sees the input: zeros when traced
    with pytest.raises(Y9Error, match=r"float32 ONNX graph differs from torch .*bad\.onnx was not written"):
        export_onnx(broken, tmp_path / "bad.onnx", imgsz=160)
    assert not (tmp_path / "bad.onnx").exists() and not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(("value", "hw"), [(640, (640, 640)), ("640", (640, 640)), ("384,640", (384, 640)),
                                           ("384x640", (384, 640)), ((320, 192), (320, 192))])  # fmt: skip
def test_parse_imgsz(value, hw):
    assert parse_imgsz(value) == hw


def test_bad_input(small_model, tmp_path):
    out = tmp_path / "x.onnx"
    with pytest.raises(ValueError, match=r"imgsz 250x250 \(HxW\) is not a multiple of 32"):
        export_onnx(small_model, out, imgsz=250)
    with pytest.raises(ValueError, match=r"imgsz 384x650 \(HxW\) is not a multiple of 32"):
        export_onnx(small_model, out, imgsz="384,650")
    with pytest.raises(ValueError, match=r"imgsz 'big' is not understood"):
        export_onnx(small_model, out, imgsz="big")
    with pytest.raises(FileNotFoundError, match=r"checkpoint .*nope\.pt does not exist"):
        export_onnx(tmp_path / "nope.pt", out)
    with pytest.raises(TypeError, match=r"model or a checkpoint path, got int"):
        export_onnx(3, out)
    with pytest.raises(ValueError, match=r"batch 0 is not a positive integer"):
        export_onnx(small_model, out, batch=0)
    with pytest.raises(ValueError, match=r"opset 12 is too old for --end2end"):
        export_onnx(small_model, out, end2end=True, opset=12)
    with pytest.raises(
        ValueError, match=r"check_input has shape \[1, 3, 64, 64\], expected \[1, 3, 160, 160\]"
    ):
        export_onnx_report(small_model, out, imgsz=160, check_input=np.zeros((1, 3, 64, 64), np.float32))
    with pytest.raises(TypeError, match=r"to_deploy expects a y9 YOLO model"):
        export_onnx(nn.Conv2d(3, 3, 1), out)
    assert not out.exists()


def test_export_own_checkpoint(small_model, tmp_path):
    from y9train.checkpoints.load import save_checkpoint

    ckpt = save_checkpoint(small_model, tmp_path / "best.pt", epoch=3)
    path = export_onnx(ckpt, tmp_path / "best.onnx", imgsz=160)
    meta = read_metadata(path)
    assert (
        meta.source_sha256 == hashlib.sha256(ckpt.read_bytes()).hexdigest()
        and meta.names == small_model.names
    )
    x = np.random.default_rng(2).random((1, 3, 160, 160), dtype=np.float32)
    got, ref = _run(path, x), _torch(small_model, x)
    assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()


def test_official_dual_checkpoint_matches_official_outputs(shared, tmp_path):
    """yolov9-t in the official pickled format -> re-parameterized ONNX -> equals the official implementation's
    float64 output on the fixture input (256x256)."""
    ckpt = shared("fixtures", "official", "yolov9-t-dual-official-format.pt")
    with np.load(shared("fixtures", "official", "official_parity_outputs.npz")) as z:
        x, ref = z["input"].astype(np.float32), z["yolov9-t-dual-official-format.pt.main"]
    report = export_onnx_report(ckpt, tmp_path / "y9t.onnx", imgsz=256)
    assert report.model == "gelan-t"  # the auxiliary branch is gone
    assert report.metadata["source_sha256"] == hashlib.sha256(ckpt.read_bytes()).hexdigest()
    got = _run(report.path, x)
    assert np.abs(got[:, :4] - ref[:, :4]).max() <= 1e-5 * np.abs(ref[:, :4]).max()
    assert np.abs(got[:, 4:] - ref[:, 4:]).max() <= 1e-5


def _cli() -> typer.Typer:
    from y9cli import export

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    export.register(app)
    return app


def test_cli_export(shared, tmp_path):
    ckpt = shared("fixtures", "official", "gelan-t-converted-official-format.pt")
    out = tmp_path / "gt.onnx"
    res = CliRunner().invoke(
        _cli(), ["export", str(ckpt), "-o", str(out), "--imgsz", "160,224", "--dynamic-batch"]
    )
    assert res.exit_code == 0, res.output
    assert "exported gelan-t" in res.output and "[batch, 3, 160, 224]" in res.output
    assert "simplified:" in res.output and "onnxruntime vs torch: batch 2" in res.output
    assert read_metadata(out).imgsz == (160, 224)
    res = CliRunner().invoke(_cli(), ["export", str(ckpt), "-o", str(out), "--imgsz", "100", "--exist-ok"])
    assert res.exit_code != 0 and "not a multiple of 32" in str(res.exception)
