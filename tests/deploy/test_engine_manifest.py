"""check_manifest: what every engine loader runs before TensorRT sees the file (real sm89 engine)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.deploy.tiny_onnx import tiny_onnx
from y9core.errors import EngineMismatchError, ModelFileError
from y9deploy.engine.gpu import current_compute_capability
from y9deploy.engine.manifest import check_engine_for_host, check_manifest, manifest_path, read_manifest

trt = pytest.importorskip("tensorrt_rtx")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from y9deploy.engine.builder import build_engine

    root = tmp_path_factory.mktemp("engine")
    onnx_path = tiny_onnx(root / "m.onnx")
    return build_engine(onnx_path, root / "m.engine", batch="1:2:4", target="sm89"), onnx_path


@pytest.fixture
def engine(built, tmp_path):
    """A private copy of the engine, its manifest and its ONNX (tests may damage them)."""
    src, onnx_path = built
    for p in (src, manifest_path(src), onnx_path):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path / src.name


def _check(engine, **over):
    kw = dict(flavour="tensorrt_rtx", version=trt.__version__, compute_capability="sm89")
    kw.update(over)
    return check_manifest(engine, **kw)


def test_matching_machine_passes(engine):
    m = _check(engine)
    assert m.compute_capability == "sm89" and m.flavour == "tensorrt_rtx"
    assert _check(engine, compute_capability="8.9").engine_sha256 == m.engine_sha256
    assert _check(engine, onnx_path=engine.with_name("m.onnx")).onnx_file == "m.onnx"


def test_other_flavour(engine):
    with pytest.raises(EngineMismatchError) as info:
        _check(engine, flavour="tensorrt", version="10.13.0.35")
    text = str(info.value)
    assert f"built with TensorRT-RTX {trt.__version__}" in text and "loaded with TensorRT 10.13.0.35" in text


def test_other_version(engine):
    with pytest.raises(EngineMismatchError) as info:
        _check(engine, version="1.6.0.1")
    text = str(info.value)
    assert (
        trt.__version__ in text
        and "1.6.0.1 is installed" in text
        and "rebuild it from the ONNX (m.onnx)" in text
    )


def test_other_gpu(engine):
    with pytest.raises(EngineMismatchError) as info:
        _check(engine, compute_capability="sm86")
    text = str(info.value)
    assert "built for sm89 (Ada" in text and "this GPU is sm86" in text and "--target sm86" in text
    with pytest.raises(EngineMismatchError) as info:  # an H100/H200: TensorRT-RTX cannot build for it
        _check(engine, compute_capability="9.0")
    text = str(info.value)
    assert "this GPU is sm90 (Hopper" in text and "full tensorrt package" in text and "--target" not in text


def test_no_gpu(engine):
    with pytest.raises(
        EngineMismatchError, match=r"built for sm89 .* but this machine has no NVIDIA GPU.*onnxruntime"
    ):
        _check(engine, compute_capability=None)


@pytest.mark.skipif(current_compute_capability() == "sm89", reason="this machine has an sm89 GPU")
def test_loading_here_fails_without_an_sm89_gpu(engine):
    here = current_compute_capability()
    expected = "this machine has no NVIDIA GPU" if here is None else f"this GPU is {here}"
    with pytest.raises(EngineMismatchError, match=expected):
        check_engine_for_host(engine)


def test_truncated_engine(engine):
    data = engine.read_bytes()
    engine.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        ModelFileError, match=r"m\.engine is \d+ bytes but its manifest records \d+: the file is truncated"
    ):
        _check(engine)


def test_corrupt_engine(engine):
    data = bytearray(engine.read_bytes())
    data[len(data) // 2] ^= 0xFF
    engine.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"m\.engine is corrupt or was modified"):
        _check(engine)
    _check(engine, verify_sha256=False)  # the size alone cannot see it


def test_changed_onnx(engine):
    onnx_path = engine.with_name("m.onnx")
    onnx_path.write_bytes(onnx_path.read_bytes() + b"\0")
    with pytest.raises(EngineMismatchError, match=r"m\.onnx changed since .*m\.engine was built from it"):
        _check(engine, onnx_path=onnx_path)


def test_missing_files_and_bad_manifests(engine):
    with pytest.raises(ModelFileError, match=r"engine file .*nope\.engine does not exist"):
        _check(engine.with_name("nope.engine"))
    man = manifest_path(engine)
    data = json.loads(man.read_text())
    del data["engine_sha256"]
    man.write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match=r"m\.engine\.json lacks engine_sha256"):
        read_manifest(engine)
    man.write_text("{not json")
    with pytest.raises(ModelFileError, match=r"m\.engine\.json is not valid JSON"):
        _check(engine)
    man.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ModelFileError, match=r"format 'something-else'"):
        _check(engine)
    man.unlink()
    with pytest.raises(ModelFileError, match=r"m\.engine has no manifest m\.engine\.json beside it"):
        _check(engine)
