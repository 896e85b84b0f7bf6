"""Per-backend verdicts for ``y9 doctor``: ``verdicts(...)``, a pure function of the facts ``doctor.diagnose()``
gathers (``GpuInfo`` for each GPU, the installed versions), gives one ``BackendVerdict`` per backend with one
plain sentence, e.g. "TensorRT-RTX is installed but this GPU is sm90 (NVIDIA H200): ...".
"""

from __future__ import annotations

from dataclasses import dataclass

from y9deploy.engine.flavour import RTX_TARGETS  # TensorRT-RTX's GPUs, when tensorrt_rtx cannot be imported


@dataclass
class GpuInfo:
    index: int
    name: str
    compute_capability: str  # "sm90"
    memory_gb: float
    driver: str  # driver version (nvidia-smi) or "" when unknown


@dataclass
class BackendVerdict:
    backend: str  # "TensorRT", "TensorRT-RTX", "ONNX Runtime (CUDA)", ...
    runs: bool
    reason: str  # one sentence


def verdicts(
    *,
    gpus: list[GpuInfo],
    torch: str | None,
    torch_sees_gpu: bool,
    onnxruntime: str | None,
    onnxruntime_providers: list[str],
    tensorrt: str | None,
    tensorrt_rtx: str | None,
    cuda_python: str | None,
    rtx_ccs: tuple[str, ...] = RTX_TARGETS,
    triton: str | None = None,
) -> list[BackendVerdict]:
    """One plain sentence per backend about whether it runs on this machine (pure: facts in, sentences out)."""
    out: list[BackendVerdict] = []
    gpu = gpus[0] if gpus else None
    this = f"this GPU is {gpu.compute_capability} ({gpu.name})" if gpu else "this machine has no NVIDIA GPU"
    buffers_ok = torch_sees_gpu or cuda_python is not None
    # TensorRT
    if tensorrt is None:
        out.append(
            BackendVerdict(
                "TensorRT",
                False,
                "TensorRT (tensorrt) is not installed; engines for any NVIDIA GPU "
                "need it (pip install --extra-index-url https://pypi.nvidia.com tensorrt).",
            )
        )
    elif gpu is None:
        out.append(
            BackendVerdict(
                "TensorRT",
                False,
                f"TensorRT {tensorrt} is installed but {this}: .engine files cannot run here.",
            )
        )
    elif not buffers_ok:
        out.append(
            BackendVerdict(
                "TensorRT",
                False,
                f"TensorRT {tensorrt} is installed but neither torch with CUDA nor "
                "cuda-python is, so there is nothing to allocate GPU buffers with: pip install cuda-python.",
            )
        )
    else:
        out.append(
            BackendVerdict(
                "TensorRT",
                True,
                f"TensorRT {tensorrt} runs .engine files built on this "
                f"{gpu.compute_capability} GPU with this exact TensorRT version.",
            )
        )
    # TensorRT-RTX
    if tensorrt_rtx is None:
        out.append(
            BackendVerdict(
                "TensorRT-RTX",
                False,
                "TensorRT-RTX (tensorrt-rtx) is not installed; it runs on RTX "
                f"GPUs ({'/'.join(rtx_ccs)}) and builds engines for them ahead of time (pip install tensorrt-rtx).",
            )
        )
    elif gpu is None:
        out.append(
            BackendVerdict(
                "TensorRT-RTX",
                False,
                f"TensorRT-RTX {tensorrt_rtx} is installed but {this}: it can "
                "build engines ahead of time here (y9 build-engine --target sm89) but not run them.",
            )
        )
    elif gpu.compute_capability not in rtx_ccs:
        alt = "TensorRT" if tensorrt else "onnxruntime-gpu or TensorRT"
        out.append(
            BackendVerdict(
                "TensorRT-RTX",
                False,
                f"TensorRT-RTX {tensorrt_rtx} is installed but {this}, which "
                f"TensorRT-RTX does not support ({'/'.join(rtx_ccs)} only): use {alt}.",
            )
        )
    elif not buffers_ok:
        out.append(
            BackendVerdict(
                "TensorRT-RTX",
                False,
                f"TensorRT-RTX {tensorrt_rtx} is installed but neither torch "
                "with CUDA nor cuda-python is: pip install cuda-python.",
            )
        )
    else:
        out.append(
            BackendVerdict(
                "TensorRT-RTX",
                True,
                f"TensorRT-RTX {tensorrt_rtx} runs engines built for "
                f"{gpu.compute_capability} with this exact version.",
            )
        )
    # ONNX Runtime
    if onnxruntime is None:
        out.append(
            BackendVerdict(
                "ONNX Runtime",
                False,
                "onnxruntime is not installed; .onnx models need it "
                "(pip install onnxruntime, or onnxruntime-gpu for NVIDIA GPUs).",
            )
        )
    else:
        has_cuda = "CUDAExecutionProvider" in onnxruntime_providers
        if has_cuda and gpu is not None:
            out.append(
                BackendVerdict(
                    "ONNX Runtime (CUDA)",
                    True,
                    f"onnxruntime {onnxruntime} runs .onnx models on the GPU (CUDAExecutionProvider).",
                )
            )
        elif has_cuda:
            out.append(
                BackendVerdict(
                    "ONNX Runtime (CUDA)",
                    False,
                    f"onnxruntime {onnxruntime} has the CUDA execution "
                    f"provider but {this}: .onnx models run on the CPU.",
                )
            )
        elif gpu is not None:
            out.append(
                BackendVerdict(
                    "ONNX Runtime (CUDA)",
                    False,
                    f"onnxruntime {onnxruntime} has no CUDA execution "
                    f"provider although {this}: pip install onnxruntime-gpu (and uninstall onnxruntime).",
                )
            )
        out.append(
            BackendVerdict(
                "ONNX Runtime (CPU)", True, f"onnxruntime {onnxruntime} runs .onnx models on the CPU."
            )
        )
    # PyTorch
    if torch is None:
        out.append(
            BackendVerdict(
                "PyTorch",
                False,
                "torch is not installed; .pt checkpoints need it (export them to "
                "ONNX on a machine with torch to run them here).",
            )
        )
    else:
        if torch_sees_gpu:
            out.append(
                BackendVerdict(
                    "PyTorch (CUDA)",
                    True,
                    f"torch {torch} runs .pt checkpoints on the GPU "
                    "(FP16, channels_last, CUDA graphs) and does the GPU pre- and post-processing"
                    + (
                        f" (NMS replayed as CUDA graphs with triton {triton})."
                        if triton
                        else "; triton is not installed, so the GPU NMS runs eagerly (slower): pip install triton."
                    ),
                )
            )
        elif gpu is not None:
            out.append(
                BackendVerdict(
                    "PyTorch (CUDA)",
                    False,
                    f"torch {torch} does not see {this} (a CPU build, or a "
                    "CUDA build that does not match the driver): install a CUDA build of torch.",
                )
            )
        out.append(BackendVerdict("PyTorch (CPU)", True, f"torch {torch} runs .pt checkpoints on the CPU."))
    return out
