"""Pick and open the backend for a model file from its suffix (and, for engines, its manifest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from y9core.files.file_paths import expect_file
from y9deploy.runtime.backends.backend import Backend

ENGINE_SUFFIXES = (".engine", ".trt", ".plan")
ONNX_SUFFIXES = (".onnx",)
TORCH_SUFFIXES = (".pt", ".pth")


def backend_kind(path: str | Path) -> str:
    """``"tensorrt"``, ``"onnxruntime"`` or ``"torch"`` for a model path; ValueError for another suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in ENGINE_SUFFIXES:
        return "tensorrt"
    if suffix in ONNX_SUFFIXES:
        return "onnxruntime"
    if suffix in TORCH_SUFFIXES:
        return "torch"
    raise ValueError(
        f"{path} has suffix {suffix or '(none)'!r}; expected a TensorRT engine (.engine, .trt, .plan), "
        "an ONNX model (.onnx) or a checkpoint (.pt)."
    )


def open_backend(
    path: str | Path,
    *,
    device: str | int | None = None,
    imgsz: int | tuple[int, int] | None = None,
    half: bool | None = None,
    cuda_graph: bool = True,
    stream: int | None = None,
    threads: int | None = None,
    compile: bool = False,
    facts: str | Path | None = None,
) -> Backend:
    """Open ``path`` with the backend its suffix names.

    Args:
        device: None (the best device the backend can use), "cpu", "cuda", "cuda:N".
        imgsz: network input for ``.pt`` checkpoints (default: the size the checkpoint records, else 640); for ONNX and engines the file fixes it
            and a different value is a ValueError.
        half: FP16 for ``.pt`` checkpoints (default: on CUDA); ONNX and engines carry their precision.
        cuda_graph: CUDA graph replay (torch, TensorRT).
        stream: a CUDA stream handle for ONNX Runtime to run on.
        threads: CPU threads for ONNX Runtime.
        compile: ``torch.compile`` a ``.pt`` model (CUDA only; other suffixes: ValueError).
        facts: for an engine without a y9 manifest (trtexec ...), the ONNX it was built from or its
            ``.facts.json`` sidecar (default: found beside the engine); other suffixes: ValueError.
    Raises:
        FileNotFoundError, ModelFileError, EngineMismatchError, BackendUnavailableError, ValueError.
    """
    path = expect_file(path, "model file", "a .engine, .onnx or .pt file")
    kind = backend_kind(path)
    backend: Any
    if facts is not None and kind != "tensorrt":
        raise ValueError(f"facts= applies to TensorRT engines without a y9 manifest; {path.name} is not one.")
    if compile and kind != "torch":
        raise ValueError(f"compile=True applies to .pt checkpoints (torch.compile); {path.name} is not one.")
    if kind == "torch":
        from y9deploy.runtime.backends.torch_backend import TorchBackend

        backend = TorchBackend(
            path,
            device,
            imgsz=imgsz,
            half=half,
            cuda_graph=cuda_graph,
            compile=compile,
        )
    elif kind == "onnxruntime":
        from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

        backend = OnnxRuntimeBackend(path, device, threads=threads, stream=stream)
    else:
        from y9deploy.runtime.backends.tensorrt_backend import TensorRTBackend

        backend = TensorRTBackend(path, device, cuda_graph=cuda_graph, facts=facts)
    if kind != "torch" and imgsz is not None:
        want = (imgsz, imgsz) if isinstance(imgsz, int) else tuple(int(v) for v in imgsz)
        if want != tuple(backend.input_hw):
            backend.close()
            raise ValueError(
                f"imgsz={imgsz!r} was given but {path.name} has a fixed input of {backend.input_hw[0]}x"
                f"{backend.input_hw[1]}; re-export it at that size or leave imgsz unset."
            )
    return backend

