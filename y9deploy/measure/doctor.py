"""What is installed here, which GPU this is, and in plain words what will and will not run.

``diagnose()`` gathers the facts into a ``DoctorReport``; ``doctor_verdicts.verdicts(...)`` (a pure function of
those facts) turns them into one sentence per backend, e.g. "TensorRT-RTX is installed but this GPU is sm90
(NVIDIA H200): ...". The CLI (``y9 doctor``) only prints.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from y9deploy.engine.flavour import RTX_TARGETS  # TensorRT-RTX's GPUs, when tensorrt_rtx cannot be imported
from y9deploy.measure.doctor_verdicts import BackendVerdict, GpuInfo, verdicts


@dataclass
class DoctorReport:
    python: str
    platform: str
    numpy: str | None
    opencv: str | None
    torch: str | None
    torch_cuda: str | None  # CUDA version torch was built with ("13.0"), None for a CPU build
    torch_sees_gpu: bool
    onnxruntime: str | None
    onnxruntime_package: str | None  # "onnxruntime", "onnxruntime-gpu", ...
    onnxruntime_providers: list[str]
    tensorrt: str | None
    tensorrt_rtx: str | None
    cuda_python: str | None
    cuda_driver: str  # the CUDA version the driver supports ("13.0"), "" without a driver
    triton: str | None = None  # the triton package (GPU NMS kernels, CUDA-graph post-processing; used on GPUs only)
    tritonclient: str | None = None  # Triton Inference Server's client (TritonDetector, y9 triton's served models)
    device: str = "cpu"  # a Detector's default device here; for a raw model there it uses (pre/post.choice):
    preprocess: str = ""  # the pre-processing implementation (e.g. "hybrid", "host")
    postprocess: str = ""  # the post-processing implementation (e.g. "graph", "torch", "host")
    gpus: list[GpuInfo] = field(default_factory=list)
    verdicts: list[BackendVerdict] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """One line: what runs here."""
        runs = [v.backend for v in self.verdicts if v.runs]
        return "Runs here: " + (", ".join(runs) if runs else "nothing (install onnxruntime or torch)") + "."


def _module_version(name: str) -> str | None:
    try:
        module = import_module(name)
    except Exception:  # noqa: BLE001 - a broken install counts as missing here
        return None
    return str(getattr(module, "__version__", "unknown"))


def _dist_version(*names: str) -> tuple[str | None, str | None]:
    for n in names:
        try:
            return n, version(n)
        except PackageNotFoundError:
            continue
    return None, None


def _gpus_from_torch() -> list[GpuInfo]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append(GpuInfo(i, p.name, f"sm{p.major}{p.minor}", round(p.total_memory / 2**30, 1), ""))
    return out


def _gpus_from_cuda_python() -> list[GpuInfo]:
    try:
        from y9deploy.runtime.backends import cuda

        n = cuda.device_count()
        out = []
        for i in range(n):
            prop = cuda.call("cudaGetDeviceProperties", i)
            out.append(
                GpuInfo(
                    i,
                    cuda.device_name(i),
                    cuda.compute_capability(i),
                    round(int(prop.totalGlobalMem) / 2**30, 1),
                    "",
                )
            )
        return out
    except Exception:  # noqa: BLE001 - no bindings or no driver: no GPU seen this way
        return []


def _nvidia_smi_driver() -> str:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ""
    try:
        query = [exe, "--query-gpu=driver_version", "--format=csv,noheader"]
        res = subprocess.run(query, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else ""


def _cuda_driver() -> str:
    try:
        from y9deploy.runtime.backends import cuda

        return cuda.driver_version()
    except Exception:  # noqa: BLE001
        return ""


def diagnose() -> DoctorReport:
    """Look at this machine (imports torch, onnxruntime and TensorRT if present; never raises for a missing one)."""
    numpy_v, cv2_v = _module_version("numpy"), _module_version("cv2")
    torch_v = _module_version("torch")
    torch_cuda, torch_gpu = None, False
    if torch_v is not None:
        import torch

        torch_cuda = torch.version.cuda
        torch_gpu = bool(torch.cuda.is_available())
    ort_v = _module_version("onnxruntime")
    providers: list[str] = []
    if ort_v is not None:
        import onnxruntime

        providers = list(onnxruntime.get_available_providers())
    ort_pkg, _ = _dist_version(
        "onnxruntime-gpu", "onnxruntime", "onnxruntime-directml", "onnxruntime-openvino"
    )
    trt_v, rtx_v = _module_version("tensorrt"), _module_version("tensorrt_rtx")
    _, triton_v = _dist_version("triton")  # installed or not, GPU or not (importing it needs a GPU driver)
    _, tritonclient_v = _dist_version("tritonclient")
    _, cuda_py = _dist_version("cuda-python", "cuda-bindings")
    gpus = _gpus_from_torch() or _gpus_from_cuda_python()
    driver = _nvidia_smi_driver()
    for g in gpus:
        g.driver = driver
    rtx_ccs = RTX_TARGETS
    if rtx_v is not None:
        try:
            from y9deploy.engine.flavour import load_flavour

            rtx_ccs = load_flavour("tensorrt_rtx").aot_targets or RTX_TARGETS
        except Exception:  # noqa: BLE001
            pass
    from y9deploy.runtime.frame_pipeline import default_choice

    if torch_gpu:  # what the Detector's rule reads (triton imports here), not only "installed"
        from y9core.post.choice import probe

        triton_works = probe().triton
    else:
        triton_works = False
    device, pre, post = default_choice(torch_cuda=torch_gpu, triton=triton_works)
    report = DoctorReport(
        python=platform.python_version(),
        platform=platform.platform(),
        numpy=numpy_v,
        opencv=cv2_v,
        torch=torch_v,
        torch_cuda=torch_cuda,
        torch_sees_gpu=torch_gpu,
        onnxruntime=ort_v,
        onnxruntime_package=ort_pkg,
        onnxruntime_providers=providers,
        tensorrt=trt_v,
        tensorrt_rtx=rtx_v,
        cuda_python=cuda_py,
        cuda_driver=_cuda_driver(),
        triton=triton_v,
        tritonclient=tritonclient_v,
        device=device,
        preprocess=pre,
        postprocess=post,
        gpus=gpus,
    )
    report.verdicts = verdicts(
        gpus=gpus,
        torch=torch_v,
        torch_sees_gpu=torch_gpu,
        onnxruntime=ort_v,
        onnxruntime_providers=providers,
        tensorrt=trt_v,
        tensorrt_rtx=rtx_v,
        cuda_python=cuda_py,
        rtx_ccs=tuple(rtx_ccs),
        triton=triton_v,
    )
    return report


def report_dict(report: DoctorReport) -> dict[str, Any]:
    from dataclasses import asdict

    return {**asdict(report), "summary": report.summary}
