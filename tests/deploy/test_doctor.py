"""y9 doctor: the facts it reports about this machine, and the verdicts for machines we do not have."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from y9deploy.measure.doctor import diagnose
from y9deploy.measure.doctor_verdicts import GpuInfo, verdicts

H200 = GpuInfo(0, "NVIDIA H200", "sm90", 139.8, "580.159.03")
RTX4090 = GpuInfo(0, "NVIDIA GeForce RTX 4090", "sm89", 24.0, "580.0")
BASE = dict(torch=None, torch_sees_gpu=False, onnxruntime=None, onnxruntime_providers=[], tensorrt=None,
            tensorrt_rtx=None, cuda_python=None)  # fmt: skip


def by_backend(items):
    return {v.backend: v for v in items}


def test_rtx_on_hopper_says_what_to_use_instead():
    v = by_backend(verdicts(gpus=[H200], **{**BASE, "tensorrt_rtx": "1.7.1.116", "cuda_python": "13.4"}))
    rtx = v["TensorRT-RTX"]
    assert not rtx.runs
    assert "TensorRT-RTX 1.7.1.116 is installed but this GPU is sm90 (NVIDIA H200)" in rtx.reason
    assert "use onnxruntime-gpu or TensorRT" in rtx.reason
    with_trt = by_backend(
        verdicts(gpus=[H200], **{**BASE, "tensorrt_rtx": "1.7", "tensorrt": "10.9", "cuda_python": "13"})
    )
    assert with_trt["TensorRT"].runs and "use TensorRT." in with_trt["TensorRT-RTX"].reason


def test_rtx_on_an_rtx_gpu_runs():
    v = by_backend(verdicts(gpus=[RTX4090], **{**BASE, "tensorrt_rtx": "1.7", "cuda_python": "13"}))
    assert v["TensorRT-RTX"].runs and "sm89" in v["TensorRT-RTX"].reason
    assert not v["TensorRT"].runs and "not installed" in v["TensorRT"].reason
    no_buffers = by_backend(verdicts(gpus=[RTX4090], **{**BASE, "tensorrt_rtx": "1.7"}))
    assert not no_buffers["TensorRT-RTX"].runs and "cuda-python" in no_buffers["TensorRT-RTX"].reason


def test_no_gpu_machine():
    v = by_backend(verdicts(gpus=[], **{**BASE, "tensorrt_rtx": "1.7", "onnxruntime": "1.32",
                                        "onnxruntime_providers": ["CPUExecutionProvider"], "torch": "2.13.0+cpu"}))  # fmt: skip
    assert not v["TensorRT-RTX"].runs and "ahead of time" in v["TensorRT-RTX"].reason
    assert v["ONNX Runtime (CPU)"].runs and "ONNX Runtime (CUDA)" not in v
    assert v["PyTorch (CPU)"].runs and "PyTorch (CUDA)" not in v


def test_gpu_without_gpu_packages():
    v = by_backend(verdicts(gpus=[H200], **{**BASE, "onnxruntime": "1.32", "onnxruntime_providers": ["CPUExecutionProvider"],
                                            "torch": "2.13.0+cpu"}))  # fmt: skip
    assert (
        not v["ONNX Runtime (CUDA)"].runs and "pip install onnxruntime-gpu" in v["ONNX Runtime (CUDA)"].reason
    )
    assert not v["PyTorch (CUDA)"].runs and "CUDA build of torch" in v["PyTorch (CUDA)"].reason
    ok = by_backend(verdicts(gpus=[H200], **{**BASE, "onnxruntime": "1.31", "torch": "2.11", "torch_sees_gpu": True,
                                             "onnxruntime_providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]}))  # fmt: skip
    assert ok["ONNX Runtime (CUDA)"].runs and ok["PyTorch (CUDA)"].runs
    nothing = verdicts(gpus=[], **BASE)
    assert not any(v.runs for v in nothing) and all(v.reason.endswith(".") for v in nothing)


def test_diagnose_reports_this_machine():
    import numpy

    report = diagnose()
    assert report.numpy == numpy.__version__
    try:
        import onnxruntime
    except ImportError:
        assert report.onnxruntime is None
    else:
        assert report.onnxruntime == onnxruntime.__version__
        assert report.onnxruntime_providers == onnxruntime.get_available_providers()
    try:
        import torch
    except ImportError:
        assert report.torch is None
    else:
        assert report.torch == torch.__version__ and report.torch_sees_gpu == torch.cuda.is_available()
        if not torch.cuda.is_available():
            assert report.gpus == []
    assert report.summary.startswith("Runs here: ")
    assert {v.backend for v in report.verdicts} >= {"TensorRT", "TensorRT-RTX"}


def test_cli_doctor():
    from y9cli.app import app

    runner = CliRunner()
    res = runner.invoke(app, ["doctor"])
    assert res.exit_code == 0, res.output
    assert "TensorRT-RTX" in res.output and "Runs here:" in res.output and "numpy" in res.output
    report = diagnose()
    assert f"{report.preprocess} / {report.postprocess} on {report.device}" in res.output  # the choice is shown
    res = runner.invoke(app, ["doctor", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["summary"].startswith("Runs here:") and isinstance(data["verdicts"], list)


@pytest.mark.parametrize("gpus", [[], [H200]])
def test_every_verdict_is_one_sentence(gpus):
    everything = dict(torch="2.11", torch_sees_gpu=bool(gpus), onnxruntime="1.31", tensorrt="10.9",
                      onnxruntime_providers=["CUDAExecutionProvider"], tensorrt_rtx="1.7", cuda_python="13")  # fmt: skip
    for v in verdicts(gpus=gpus, **everything):
        assert v.reason.endswith(".") and "\n" not in v.reason


def test_torch_cuda_verdict_says_whether_graph_post_processing_runs():
    base = {**BASE, "torch": "2.11.0+cu130", "torch_sees_gpu": True}
    with_triton = by_backend(verdicts(gpus=[H200], **base, triton="3.6.0"))["PyTorch (CUDA)"]
    assert with_triton.runs and "CUDA graphs with triton 3.6.0" in with_triton.reason
    without = by_backend(verdicts(gpus=[H200], **base))["PyTorch (CUDA)"]
    assert (
        without.runs
        and "triton is not installed" in without.reason
        and "pip install triton" in without.reason
    )
