"""The flavour layer: which TensorRT does what (real tensorrt_rtx; the full tensorrt's decisions by its API)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from y9core.errors import BackendUnavailableError
from y9deploy.engine.flavour import RTX_TARGETS, Flavour, available_flavours, load_flavour, normalize_cc


@pytest.mark.parametrize(
    ("value", "expected"),
    [("sm89", "sm89"), ("SM_89", "sm89"), ("8.9", "sm89"), ("89", "sm89"), ((8, 9), "sm89"), ("12.0", "sm120"),
     ("sm120", "sm120"), ("9.0", "sm90"), (None, None)],
)  # fmt: skip
def test_normalize_cc(value, expected):
    assert normalize_cc(value) == expected


@pytest.mark.parametrize("bad", ["ada", "sm", "8.", "sm8x", "1234"])
def test_normalize_cc_refuses_junk(bad):
    with pytest.raises(ValueError, match="compute capability"):
        normalize_cc(bad)


def test_rtx_flavour_facts():
    trt = pytest.importorskip("tensorrt_rtx")
    fl = load_flavour("tensorrt-rtx")
    assert fl == load_flavour("rtx") and fl.name == "tensorrt_rtx" and fl.version == trt.__version__
    assert fl.display == f"TensorRT-RTX {trt.__version__}"
    assert fl.fp16_by_onnx_conversion and not fl.supports_timing_cache and not fl.builds_nms
    assert {"sm75", "sm80", "sm86", "sm89", "sm120"} <= set(fl.aot_targets)
    assert "sm90" not in fl.aot_targets  # not Hopper
    assert set(fl.aot_targets) == set(RTX_TARGETS)  # the constant used in sentences written without TensorRT
    assert not hasattr(trt.BuilderFlag, "FP16")  # why FP16 must come from the ONNX
    assert "tensorrt_rtx" in available_flavours()
    assert load_flavour(prefer_aot=True).name == "tensorrt_rtx"


def test_rtx_target_rules():
    pytest.importorskip("tensorrt_rtx")
    fl = load_flavour("tensorrt_rtx")
    assert fl.check_target("sm89", None) == "sm89"
    assert fl.check_target(None, "sm86") == "sm86"  # no target: the local GPU
    with pytest.raises(ValueError, match="cannot build for sm90"):
        fl.check_target(None, "sm90")  # an H200 cannot run TensorRT-RTX engines
    with pytest.raises(BackendUnavailableError, match="--target sm89"):
        fl.check_target(None, None)


def _full_trt(version: str, *, has_fp16_flag: bool) -> Flavour:
    """The full TensorRT's facts as its Python API exposes them (BuilderFlag.FP16 exists in TensorRT 10 and is
    gone in TensorRT 11; STRONGLY_TYPED is bit 0 of NetworkDefinitionCreationFlag)."""
    flags = SimpleNamespace(FP16=0) if has_fp16_flag else SimpleNamespace()
    module = SimpleNamespace(
        BuilderFlag=flags, NetworkDefinitionCreationFlag=SimpleNamespace(STRONGLY_TYPED=0)
    )
    return Flavour("tensorrt", module, version)


def test_full_tensorrt_decisions():
    trt10 = _full_trt("10.13.0.35", has_fp16_flag=True)
    assert trt10.display == "TensorRT 10.13.0.35" and trt10.aot_targets == ()
    assert not trt10.fp16_by_onnx_conversion and trt10.network_flags() == 0
    assert trt10.supports_timing_cache and trt10.builds_nms
    set_flags = []
    trt10.apply_precision(SimpleNamespace(set_flag=set_flags.append), fp16=True)
    assert set_flags == [0]  # BuilderFlag.FP16
    assert trt10.apply_target(SimpleNamespace(), "sm90", "sm90") is False  # nothing to set: local GPU only
    trt11 = _full_trt("11.0.0.1", has_fp16_flag=False)
    assert trt11.fp16_by_onnx_conversion and trt11.network_flags() == 1  # strongly typed, FP16 ONNX


def test_full_tensorrt_builds_only_for_its_own_gpu():
    fl = _full_trt("10.13.0.35", has_fp16_flag=True)
    assert fl.check_target(None, "sm90") == "sm90"
    assert fl.check_target("sm90", "sm90") == "sm90"
    with pytest.raises(
        ValueError, match=r"cannot build ahead of time for sm89: it builds only for the GPU it runs on \(sm90"
    ):
        fl.check_target("sm89", "sm90")
    with pytest.raises(BackendUnavailableError, match=r"needs an NVIDIA GPU to build.*tensorrt-rtx"):
        fl.check_target(None, None)


def test_unknown_flavour_name():
    with pytest.raises(ValueError, match="flavour 'tensorflow' is not known"):
        load_flavour("tensorflow")


def test_progress_monitor_forwards_to_the_callback():
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.progress import RecordingProgress

    fl = load_flavour("tensorrt_rtx")
    rec = RecordingProgress()
    monitor = fl.make_progress_monitor(rec)
    assert isinstance(monitor, fl.trt.IProgressMonitor)
    monitor.phase_start("Building engine", None, 3)
    assert monitor.step_complete("Building engine", 0) is True
    monitor.phase_finish("Building engine")
    assert rec.events == [("start", "Building engine", (None, 3)), ("step", "Building engine", 0),
                          ("finish", "Building engine", None)]  # fmt: skip
    assert fl.make_progress_monitor(None) is None


def test_engine_modules_import_without_torch_or_tensorrt():
    code = (
        "import sys; import y9deploy.engine.manifest, y9deploy.engine.flavour, y9deploy.engine.gpu; "
        "bad = [m for m in ('torch', 'tensorrt', 'tensorrt_rtx', 'onnx') if m in sys.modules]; "
        "assert not bad, bad; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
