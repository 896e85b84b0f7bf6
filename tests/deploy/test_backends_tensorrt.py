"""The TensorRT backend where no GPU can run it: the manifest check before loading (a real engine built ahead
of time for sm89 with TensorRT-RTX), the missing-package sentence, profile shape selection, the checked CUDA
wrapper's errors. Running an engine needs an RTX GPU (tensorrt_rtx) or TensorRT on a GPU: not tested here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.deploy.runtime_support import export_tiny_onnx
from y9core.errors import BackendUnavailableError, EngineMismatchError, ModelFileError
from y9deploy import Detector
from y9deploy.runtime.backends.tensorrt_backend import (
    engine_profile,
    output_shape,
    profile_batch_range,
    select_input_shape,
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Path:
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine

    tmp = tmp_path_factory.mktemp("engine")
    onnx = export_tiny_onnx(tmp / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True)
    return build_engine(onnx, tmp / "tiny.engine", target="sm89", batch=(1, 2, 4))


def _copy(engine: Path, tmp_path: Path, name: str = "copy.engine") -> Path:
    dst = tmp_path / name
    dst.write_bytes(engine.read_bytes())
    (tmp_path / (name + ".json")).write_text(Path(str(engine) + ".json").read_text())
    return dst


def test_engine_for_another_gpu_is_refused_before_loading(engine, monkeypatch):
    import y9deploy.engine.gpu as gpu

    if gpu.current_compute_capability(0) is None:  # this machine: no GPU at all
        with pytest.raises(EngineMismatchError, match=r"built for sm89 .*no NVIDIA GPU"):
            Detector(engine)
    monkeypatch.setattr(gpu, "current_compute_capability", lambda device=0: "sm90")
    with pytest.raises(EngineMismatchError) as info:
        Detector(engine)
    msg = str(info.value)
    assert "sm89" in msg and "sm90" in msg and str(engine) in msg


def test_damaged_engine_and_missing_manifest(engine, tmp_path, monkeypatch):
    import y9deploy.engine.gpu as gpu

    monkeypatch.setattr(gpu, "current_compute_capability", lambda device=0: "sm89")
    cut = _copy(engine, tmp_path, "cut.engine")
    cut.write_bytes(cut.read_bytes()[:-100])
    with pytest.raises(ModelFileError, match="truncated"):
        Detector(cut)
    flipped = _copy(engine, tmp_path, "flipped.engine")
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="corrupt"):
        Detector(flipped)
    bare = tmp_path / "bare.plan"
    bare.write_bytes(engine.read_bytes())
    with pytest.raises(ModelFileError, match="has no y9 manifest .* and no model facts beside it"):
        Detector(bare)


def test_missing_tensorrt_package_is_one_sentence(engine, tmp_path):
    """A manifest naming the full TensorRT, which is not installed here: say which package to install."""
    pytest.importorskip("tensorrt_rtx")
    try:
        import tensorrt  # noqa: F401

        pytest.skip("tensorrt is installed here")
    except ImportError:
        pass
    other = _copy(engine, tmp_path)
    manifest = Path(str(other) + ".json")
    data = json.loads(manifest.read_text())
    data["flavour"] = "tensorrt"
    manifest.write_text(json.dumps(data))
    with pytest.raises(BackendUnavailableError, match=r"tensorrt\) is not installed.*pip install"):
        Detector(other)


def test_cpu_device_is_refused(engine):
    with pytest.raises(ValueError, match="only on an NVIDIA GPU"):
        Detector(engine, device="cpu")


def test_profile_shape_selection():
    profile = ((1, 3, 640, 640), (8, 3, 640, 640), (32, 3, 640, 640))
    assert profile_batch_range(profile) == (1, 32)
    assert select_input_shape(profile, 1) == (1, 3, 640, 640)
    assert select_input_shape(profile, 32) == (32, 3, 640, 640)
    with pytest.raises(ValueError, match="batches of 1 to 32 images"):
        select_input_shape(profile, 33)
    with pytest.raises(ValueError, match="batches of 1 to 32"):
        select_input_shape(profile, 0)
    free_hw = ((1, 3, 320, 320), (4, 3, 640, 480), (8, 3, 1280, 1280))  # a profile with free H and W
    assert select_input_shape(free_hw, 2) == (2, 3, 640, 480)
    static = ((4, 3, 384, 640),) * 3
    assert profile_batch_range(static) == (4, 4) and select_input_shape(static, 4) == (4, 3, 384, 640)
    with pytest.raises(ValueError, match="malformed"):
        select_input_shape(((1, 3), (1, 3, 2), (1, 3)), 1)

    class Profile0:  # what ICudaEngine.get_tensor_profile_shape answers for a dynamic-batch input
        def get_tensor_profile_shape(self, name, index):
            return [(1, 3, 640, 640), (8, 3, 640, 640), (32, 3, 640, 640)]

    assert engine_profile(Profile0(), "images", (-1, 3, 640, 640)) == profile
    assert engine_profile(Profile0(), "images", (4, 3, 384, 640)) == static  # a static input: its own shape
    assert output_shape((-1, 84, 8400), 16) == (16, 84, 8400)
    assert output_shape((2, 300, 4), 16) == (2, 300, 4)


def test_checked_cuda_wrapper_without_a_gpu():
    """Every CUDA call goes through one checked wrapper: no driver here gives a CudaError naming the call."""
    pytest.importorskip("cuda.bindings")
    from y9deploy.runtime.backends import cuda

    if cuda.device_count() > 0:
        pytest.skip("this machine has a CUDA device")
    assert cuda.driver_version() == ""
    with pytest.raises(cuda.CudaError, match=r"CUDA call cudaMalloc failed with cudaError\w+: .+\."):
        cuda.DeviceBuffer(1024)
    with pytest.raises(cuda.CudaError, match="cudaDeviceGetAttribute"):
        cuda.compute_capability(0)
    with pytest.raises(cuda.CudaError, match="cudaStreamCreateWithFlags"):
        cuda.Stream()
