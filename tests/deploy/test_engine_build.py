"""Engine builds with the real TensorRT-RTX, ahead of time for sm89 on this CPU-only machine."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime

import onnx
import pytest
import typer
from typer.testing import CliRunner

from tests.deploy.tiny_onnx import nms_onnx, tiny_onnx, unknown_op_onnx
from y9core.errors import BackendUnavailableError, ModelFileError
from y9deploy.engine.builder import build_engine, build_engine_report, parse_batch
from y9deploy.engine.gpu import current_compute_capability
from y9deploy.engine.manifest import manifest_path, read_manifest
from y9deploy.engine.progress import RecordingProgress

trt = pytest.importorskip("tensorrt_rtx")


@pytest.fixture
def dyn_onnx(tmp_path):
    return tiny_onnx(tmp_path / "tiny.onnx", metadata={"names": json.dumps(["a", "b", "c"]), "model": "tiny"})


def test_aot_fp16_build_writes_engine_and_manifest(dyn_onnx, tmp_path):
    progress = RecordingProgress()
    result = build_engine_report(
        dyn_onnx, tmp_path / "out" / "tiny.engine", batch="1:4:8", target="sm89", progress=progress
    )
    engine = tmp_path / "out" / "tiny.engine"
    assert result.engine_path == engine and engine.stat().st_size > 10_000
    assert result.manifest_path == manifest_path(engine) == tmp_path / "out" / "tiny.engine.json"
    m = read_manifest(engine)
    assert m.to_dict() == result.manifest.to_dict()
    assert (m.flavour, m.trt_version, m.compute_capability) == ("tensorrt_rtx", trt.__version__, "sm89")
    assert m.ahead_of_time is (current_compute_capability() != "sm89")
    assert m.engine_bytes == engine.stat().st_size
    assert m.engine_sha256 == hashlib.sha256(engine.read_bytes()).hexdigest()
    assert m.onnx_sha256 == hashlib.sha256(dyn_onnx.read_bytes()).hexdigest() and m.onnx_file == "tiny.onnx"
    assert m.precision == "fp16" and m.batch == [1, 4, 8] and m.imgsz == [64, 96]
    assert m.profile == {"images": {"min": [1, 3, 64, 96], "opt": [4, 3, 64, 96], "max": [8, 3, 64, 96]}}
    # strongly typed FP16 with float32 I/O kept (keep_io_types): names, shapes, dtypes from the network
    assert m.inputs == [{"name": "images", "shape": [-1, 3, 64, 96], "dtype": "float32"}]
    assert m.outputs == [{"name": "output0", "shape": [-1, 7, 96], "dtype": "float32"}]
    assert m.onnx_metadata == {"names": '["a", "b", "c"]', "model": "tiny", "stride": "[8]"}
    assert m.names == ["a", "b", "c"] and m.facts["strides"] == [8] and m.facts["precision"] == "fp16"
    assert m.end2end is False and m.y9_version
    assert datetime.fromisoformat(m.built_at).tzinfo is not None and m.build_seconds > 0
    assert any("FP16" in n for n in result.notes)
    # the progress monitor saw balanced, nested phases
    starts = [e for e in progress.events if e[0] == "start"]
    finishes = [e for e in progress.events if e[0] == "finish"]
    assert starts and len(starts) == len(finishes)
    assert starts[0][1] == "Building engine" and starts[0][2][0] is None


def test_fp16_engine_holds_half_size_weights(tmp_path):
    onnx_path = tiny_onnx(tmp_path / "wide.onnx", width=96)  # ~0.9 M parameters: weights dominate the engine
    fp16 = build_engine(onnx_path, tmp_path / "h.engine", fp16=True, target="sm89", batch=1)
    fp32 = build_engine(onnx_path, tmp_path / "f.engine", fp16=False, target="sm89", batch=1)
    assert read_manifest(fp32).precision == "fp32" and read_manifest(fp16).precision == "fp16"
    assert fp16.stat().st_size < 0.7 * fp32.stat().st_size


def test_half_onnx_is_built_without_conversion(tmp_path):
    from y9deploy.onnx_fp16 import convert_to_fp16

    src = tiny_onnx(tmp_path / "t.onnx")
    half = tmp_path / "half.onnx"
    onnx.save(convert_to_fp16(onnx.load(str(src)), keep_io_types=False), str(half))
    result = build_engine_report(half, fp16=False, target="sm89", batch="2:2:4")
    assert result.engine_path == tmp_path / "half.engine"
    assert result.manifest.precision == "fp16" and result.manifest.inputs[0]["dtype"] == "float16"
    assert not any("converted" in n for n in result.notes)


def test_static_batch_onnx_takes_only_its_batch(tmp_path):
    onnx_path = tiny_onnx(tmp_path / "s.onnx", dynamic_batch=False, batch=2)
    m = build_engine_report(onnx_path, target="sm89").manifest
    assert m.batch == [2, 2, 2] and m.inputs[0]["shape"] == [2, 3, 64, 96]
    with pytest.raises(ValueError, match=r"static batch of 2.*--dynamic-batch"):
        build_engine(onnx_path, target="sm89", batch="1:4:8")


def test_timing_cache_is_not_pretended_with_rtx(dyn_onnx, tmp_path):
    cache = tmp_path / "timing.cache"
    result = build_engine_report(dyn_onnx, target="sm89", timing_cache=cache)
    assert any("ignores timing caches" in n for n in result.notes)
    assert not cache.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:4:16", (1, 4, 16)),
        ("8", (8, 8, 8)),
        (4, (4, 4, 4)),
        ((1, 2, 2), (1, 2, 2)),
        (" 1 : 1 : 3 ", (1, 1, 3)),
    ],
)
def test_parse_batch(text, expected):
    assert parse_batch(text) == expected


@pytest.mark.parametrize("bad", ["4:2:8", "1:8:4", "0:1:2", "a:b:c", "1:2", "1:2:3:4", (2, 1, 1)])
def test_bad_profiles_are_refused(bad, dyn_onnx):
    with pytest.raises(ValueError, match=r"batch"):
        build_engine(dyn_onnx, target="sm89", batch=bad)


def test_bad_inputs(tmp_path, dyn_onnx):
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx does not exist"):
        build_engine(tmp_path / "missing.onnx", target="sm89")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not an onnx file at all")
    with pytest.raises(ModelFileError, match=r"garbage\.onnx is not a readable ONNX model"):
        build_engine(garbage, target="sm89")
    with pytest.raises(ModelFileError, match=r"no input named 'images'"):
        build_engine(tiny_onnx(tmp_path / "named.onnx", input_name="input"), target="sm89")
    with pytest.raises(ModelFileError, match=r"64x80 \(HxW\) is not a multiple of 32"):
        build_engine(tiny_onnx(tmp_path / "odd.onnx", hw=(64, 80)), target="sm89")
    with pytest.raises(ModelFileError, match=r"dynamic height/width"):
        build_engine(tiny_onnx(tmp_path / "dynhw.onnx", dynamic_hw=True), target="sm89")
    with pytest.raises(ValueError, match=r"INT8 .*calibration"):
        build_engine(dyn_onnx, target="sm89", int8=True)
    with pytest.raises(ValueError, match=r"workspace 0 GB"):
        build_engine(dyn_onnx, target="sm89", workspace_gb=0)
    with pytest.raises(ValueError, match=r"compute capability 'gpu9'"):
        build_engine(dyn_onnx, target="gpu9")
    with pytest.raises(ValueError, match=r"engine path .* is the ONNX file itself"):
        build_engine(dyn_onnx, dyn_onnx, target="sm89")
    assert not list(tmp_path.glob("*.engine"))


def test_targets_the_flavour_cannot_build_are_refused(dyn_onnx):
    with pytest.raises(ValueError, match=r"cannot build for sm90: it supports sm75, .*sm89.*full `tensorrt`"):
        build_engine(dyn_onnx, target="sm90")
    with pytest.raises(ValueError, match=r"cannot build for sm70"):
        build_engine(dyn_onnx, target="7.0")


@pytest.mark.skipif(current_compute_capability() is not None, reason="needs a machine without an NVIDIA GPU")
def test_no_target_without_gpu_says_to_pass_one(dyn_onnx):
    with pytest.raises(BackendUnavailableError, match=r"no NVIDIA GPU was found.*--target sm89"):
        build_engine(dyn_onnx)


def test_no_tensorrt_installed_names_the_packages(dyn_onnx, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # None in sys.modules makes the import fail
    monkeypatch.setitem(sys.modules, "tensorrt_rtx", None)
    with pytest.raises(BackendUnavailableError) as info:
        build_engine(dyn_onnx, target="sm89")
    text = str(info.value)
    assert "no TensorRT is installed" in text and "NVIDIA's package index" in text
    assert "any NVIDIA GPU" in text and "tensorrt-rtx" in text and "RTX GPUs" in text
    with pytest.raises(
        BackendUnavailableError, match=r"TensorRT Python package \(tensorrt\) is not installed"
    ):
        build_engine(dyn_onnx, flavour="tensorrt")


def test_end2end_onnx_is_refused_with_rtx(tmp_path):
    onnx_path = nms_onnx(tmp_path / "e2e.onnx")
    with pytest.raises(ModelFileError) as info:
        build_engine(onnx_path, target="sm89")
    text = str(info.value)
    assert "e2e.onnx" in text and "NonMaxSuppression" in text and "TensorRT-RTX" in text
    assert "export without --end2end" in text and "NMS on the host" in text
    assert not (tmp_path / "e2e.engine").exists()


def test_parser_errors_are_reported(tmp_path):
    with pytest.raises(ModelFileError, match=r"could not parse .*bad\.onnx.*\(\d+ error\(s\)\).*NotARealOp"):
        build_engine(unknown_op_onnx(tmp_path / "bad.onnx"), target="sm89")


def _cli() -> typer.Typer:
    from y9cli import engine

    app = typer.Typer()

    @app.callback()
    def _root() -> None:  # a group, as in the real app
        pass

    engine.register(app)
    return app


def test_cli_build_engine(dyn_onnx, tmp_path):
    out = tmp_path / "cli.engine"
    res = CliRunner().invoke(
        _cli(),
        ["build-engine", str(dyn_onnx), "-o", str(out), "--fp16", "--batch", "1:4:8", "--target", "sm89"],
    )
    assert res.exit_code == 0, res.output
    assert "sm89 ahead of time" in res.output and "batch 1:4:8" in res.output and "fp16" in res.output
    assert read_manifest(out).batch == [1, 4, 8]
    res = CliRunner().invoke(_cli(), ["build-engine", str(nms_onnx(tmp_path / "e.onnx")), "--target", "sm89"])
    assert res.exit_code != 0 and isinstance(res.exception, ModelFileError)
