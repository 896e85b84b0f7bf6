"""y9 triton: model repositories checked with Triton's own protobuf definitions; TritonDetector against a real
Triton server (see tests/deploy/triton_server.py for what runs and what cannot run here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from tests.conftest import TEST_DATA
from tests.deploy.fixed_onnx import crafted_frame, fixed_boxes_onnx
from tests.deploy.runtime_support import export_tiny_onnx
from tests.deploy.triton_server import (
    TritonServer,
    as_python_backend,
    find_wheels,
    stub_environment,
    unpack_server,
)
from y9core.errors import ModelFileError, ServingError
from y9deploy import Detector
from y9deploy.serving.triton_repo import METADATA_KEY, write_triton_repo

model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
text_format = pytest.importorskip("google.protobuf.text_format")
IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]
ONNX_TYPES = {
    onnx.TensorProto.FLOAT: model_config_pb2.TYPE_FP32,
    onnx.TensorProto.FLOAT16: model_config_pb2.TYPE_FP16,
}


def parse(path: Path):
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def onnx_dims(vi) -> list[int]:
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


@pytest.fixture(scope="module")
def dyn_onnx(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


def test_onnx_repository_config_matches_the_model(dyn_onnx, tmp_path):
    from y9cli.app import app

    res = CliRunner().invoke(app, ["triton", str(dyn_onnx), "--out", str(tmp_path / "repo"), "--max-batch", "4",
                                   "--instances", "2", "--kind", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    model_dir = tmp_path / "repo" / "tiny"
    assert (model_dir / "1" / "model.onnx").read_bytes() == dyn_onnx.read_bytes()
    cfg = parse(model_dir / "config.pbtxt")
    m = onnx.load(str(dyn_onnx))
    assert cfg.name == "tiny" and cfg.platform == "onnxruntime_onnx" and cfg.max_batch_size == 4
    assert [i.name for i in cfg.input] == [vi.name for vi in m.graph.input] == ["images"]
    assert [o.name for o in cfg.output] == [vi.name for vi in m.graph.output] == ["output0"]
    for tensors, graph in ((cfg.input, m.graph.input), (cfg.output, m.graph.output)):
        for t, vi in zip(tensors, graph):
            assert onnx_dims(vi)[0] == -1  # the dynamic batch, which Triton adds itself
            assert (
                list(t.dims) == onnx_dims(vi)[1:] and t.data_type == ONNX_TYPES[vi.type.tensor_type.elem_type]
            )
    assert list(cfg.dynamic_batching.preferred_batch_size) == [4]
    assert [(g.count, g.kind) for g in cfg.instance_group] == [
        (2, model_config_pb2.ModelInstanceGroup.KIND_CPU)
    ]
    meta = json.loads(cfg.parameters[METADATA_KEY].string_value)
    props = {p.key: p.value for p in m.metadata_props}
    assert meta["names"] == json.loads(props["names"]) == ["c0", "c1", "c2"]
    assert meta["imgsz"] == [96, 128] and meta["letterbox"] == json.loads(props["letterbox"])
    assert json.loads((model_dir / "y9.json").read_text())["names"] == ["c0", "c1", "c2"]
    # default max_batch for a dynamic ONNX batch; an existing model folder is not replaced silently
    with pytest.raises(ValueError, match="already exists .*pass --exist-ok"):
        write_triton_repo(dyn_onnx, tmp_path / "repo")
    repo = write_triton_repo(dyn_onnx, tmp_path / "repo", overwrite=True)
    cfg = parse(repo.config_path)
    assert cfg.max_batch_size == 8 and list(cfg.instance_group[0].kind for _ in [0]) == [0]  # KIND_AUTO


def test_static_batch_onnx_puts_the_batch_in_the_dims(tmp_path):
    path = fixed_boxes_onnx(tmp_path / "static.onnx", [[10, 10, 4, 4], [30, 30, 4, 4]], ["a", "b"],
                            dynamic_batch=False)  # fmt: skip; 84 anchors: a raw head's at 64x64
    cfg = parse(write_triton_repo(path, tmp_path / "repo").config_path)
    assert cfg.max_batch_size == 0 and list(cfg.input[0].dims) == [1, 3, 64, 64]
    assert list(cfg.output[0].dims) == [1, 6, 84] and not cfg.HasField("dynamic_batching")
    with pytest.raises(ValueError, match="static batch of 1, so --max-batch 4 cannot apply"):
        write_triton_repo(path, tmp_path / "repo2", max_batch=4)


def test_engine_repository_config_matches_the_manifest(tmp_path):
    pytest.importorskip("tensorrt_rtx")
    from tests.deploy.tiny_onnx import tiny_onnx
    from y9deploy.engine.builder import build_engine
    from y9deploy.engine.manifest import read_manifest

    src = tiny_onnx(tmp_path / "t.onnx", metadata={"names": json.dumps(["a", "b", "c"]), "model": "tiny"})
    engine = build_engine(src, tmp_path / "t.engine", batch="1:4:8", target="sm89")
    m = read_manifest(engine)
    repo = write_triton_repo(engine, tmp_path / "repo", instances=3)
    assert repo.model_file == tmp_path / "repo" / "t" / "1" / "model.plan"
    assert repo.model_file.read_bytes() == engine.read_bytes()
    assert any("TensorRT-RTX" in n and "full TensorRT" in n for n in repo.notes)
    cfg = parse(repo.config_path)
    assert cfg.platform == "tensorrt_plan" and cfg.max_batch_size == m.profile["images"]["max"][0] == 8
    for tensors, specs in ((cfg.input, m.inputs), (cfg.output, m.outputs)):
        assert [t.name for t in tensors] == [s["name"] for s in specs]
        for t, s in zip(tensors, specs):
            assert s["shape"][0] == -1 and list(t.dims) == s["shape"][1:]
            assert t.data_type == model_config_pb2.TYPE_FP32 and s["dtype"] == "float32"
    assert list(cfg.dynamic_batching.preferred_batch_size) == [4, 8]  # the profile's opt and max
    assert [(g.count, g.kind) for g in cfg.instance_group] == [
        (3, model_config_pb2.ModelInstanceGroup.KIND_GPU)
    ]
    meta = json.loads(cfg.parameters[METADATA_KEY].string_value)
    assert (
        meta["names"] == ["a", "b", "c"] and meta["imgsz"] == m.imgsz == [64, 96] and meta["model"] == "tiny"
    )
    assert parse(write_triton_repo(engine, tmp_path / "r2", max_batch=2).config_path).max_batch_size == 2
    with pytest.raises(ValueError, match=r"--max-batch 16 is outside .*1:4:8; expected 1 to 8"):
        write_triton_repo(engine, tmp_path / "r3", max_batch=16)
    with pytest.raises(ValueError, match="runs only on GPUs"):
        write_triton_repo(engine, tmp_path / "r4", kind="cpu")
    late = build_engine(src, tmp_path / "late.engine", batch="2:4:8", target="sm89")
    with pytest.raises(ValueError, match="profile must start at 1: rebuild it with --batch 1:4:8"):
        write_triton_repo(late, tmp_path / "r5")


def test_bad_models_are_refused(tmp_path):
    from tests.deploy.tiny_onnx import nms_onnx

    with pytest.raises(FileNotFoundError, match="missing.onnx does not exist"):
        write_triton_repo(tmp_path / "missing.onnx", tmp_path / "repo")
    (tmp_path / "m.pt").write_bytes(b"x")
    with pytest.raises(ValueError, match="export a .pt checkpoint first"):
        write_triton_repo(tmp_path / "m.pt", tmp_path / "repo")
    with pytest.raises(ModelFileError, match="end-to-end model"):
        write_triton_repo(nms_onnx(tmp_path / "nms.onnx"), tmp_path / "repo")
    with pytest.raises(ServingError, match="could not be reached|failed to"):
        from y9deploy import TritonDetector

        TritonDetector("127.0.0.1:9", "tiny", timeout=2)  # nothing listens on port 9


# ------------------------------------------------------------------------------------------------ a real server
@pytest.fixture(scope="module")
def server_dir(tmp_path_factory) -> tuple[Path, Path]:
    """(the unpacked tritonserver, the Python-backend stub's bin folder)."""
    wheels = find_wheels()
    if wheels is None:
        msg = ("no nvidia-pytriton and numpy 1.x wheels in .venv/wheels/ (a Triton server for the test): run "
               "`make setup`, which downloads them")  # fmt: skip
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    root = tmp_path_factory.mktemp("tritonserver")
    return unpack_server(wheels[0], root / "server"), stub_environment(wheels[1], root / "stub-env")


def test_triton_detector_equals_detector_on_a_real_server(server_dir, dyn_onnx, tmp_path):
    from y9deploy import TritonDetector

    repo = write_triton_repo(dyn_onnx, tmp_path / "repo", max_batch=4)
    as_python_backend(repo.model_dir)  # this server has no onnxruntime backend (see triton_server.py)
    # a static-batch model with known detections: max_batch_size 0, one padded request per frame
    fixed = fixed_boxes_onnx(tmp_path / "fixed.onnx", [[12, 40, 8, 8], [48, 40, 16, 16]], ["scratch", "screw"],
                             dynamic_batch=False)  # fmt: skip
    as_python_backend(write_triton_repo(fixed, tmp_path / "repo").model_dir)
    crafted = [crafted_frame({(0, 0): 0.9}), crafted_frame({(1, 1): 0.6, (0, 0): 0.5}), crafted_frame({})]
    frames = [np.ascontiguousarray(np.asarray(__import__("cv2").imread(str(p)))) for p in IMAGES]
    frames.append(frames[0][100:400, 50:600].copy())  # a third size: another letterbox
    with Detector(dyn_onnx, device="cpu", conf=0.3) as det:
        want = det.predict(frames)
        want_override = det.predict(frames[1], conf=0.6, classes=[1])
    assert sum(len(d) for d in want) > 10  # the comparison covers many boxes
    with TritonServer(*server_dir[:1], tmp_path / "repo", tmp_path / "server.log", server_dir[1]) as server:
        for url in (server.http_url, server.grpc_url):
            with TritonDetector(url, "tiny", conf=0.3) as tdet:
                assert (
                    tdet.names == ["c0", "c1", "c2"]
                    and tdet.imgsz == (96, 128)
                    and tdet.batch_range == (1, 4)
                )
                got = tdet.predict(frames + frames)  # 6 frames: batches of 4 and 2
                for g, w in zip(got, want + want):
                    assert g.names == w.names and len(g) == len(w)
                    np.testing.assert_array_equal(g.class_id, w.class_id)
                    np.testing.assert_allclose(g.xyxy, w.xyxy, atol=1e-3)
                    np.testing.assert_allclose(g.confidence, w.confidence, atol=1e-5)
                one = tdet.predict(str(IMAGES[1]), conf=0.6, classes=[1])
                assert len(one) == len(want_override) and set(one.class_id.tolist()) <= {1}
                np.testing.assert_allclose(one.xyxy, want_override.xyxy, atol=1e-3)
        with TritonDetector(server.http_url, "fixed", conf=0.3) as tdet:
            assert tdet.batch_range == (1, 1) and tdet.max_batch_size == 0
            got = tdet.predict(crafted)
        assert [g.class_names for g in got] == [["scratch"], ["screw", "scratch"], []]
        np.testing.assert_allclose(got[1].xyxy, [[40, 32, 56, 48], [8, 36, 16, 44]])
        np.testing.assert_allclose(got[1].confidence, [153 / 255, 128 / 255], rtol=1e-6)
        with pytest.raises(ServingError, match="does not have model 'nope' ready"):
            TritonDetector(server.http_url, "nope")
    assert "successfully loaded 'tiny'" in server.log() and "successfully loaded 'fixed'" in server.log()
