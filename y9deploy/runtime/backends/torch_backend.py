"""PyTorch backend: y9 ``.pt`` checkpoints (and official-format ones) through ``y9train.checkpoints.deploy``, the
trainer's one door for deployment (imported in one place, ``_trainer``); the one place the deployment side reads a
checkpoint (its model and its facts: ``checkpoint_facts``).

The model is re-parameterized for deployment (auxiliary branch dropped, Conv+BN and RepConvN fused) and laid out
channels_last (``deploy_model``). On CUDA it runs in FP16 and, because the input shape is static per batch size,
each batch size is captured once as a CUDA graph and replayed afterwards (no per-layer launch overhead).

torch is imported when a TorchBackend is created, never at module import.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from y9core.device_spec import parse_device
from y9core.errors import BackendUnavailableError
from y9core.files.file_paths import expect_file
from y9core.model_facts import ModelFacts
from y9deploy.engine.manifest import file_sha256
from y9deploy.runtime.backends.backend import describe_model, is_torch_tensor

MAX_BATCH = 256
MAX_GRAPHS = 4  # CUDA graphs kept (one per batch size, least recently used dropped)


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise BackendUnavailableError(
            "torch is not installed: .pt checkpoints need PyTorch; export the model to ONNX "
            "('y9 export model.pt') to run it without torch."
        ) from exc
    return torch


def _trainer() -> Any:
    """``y9train.checkpoints.deploy``, the trainer's one door for deployment (torch first, for a clear sentence)."""
    import_torch()
    try:
        from y9train.checkpoints import deploy
    except ImportError as exc:
        raise BackendUnavailableError(
            f"y9train could not be imported ({exc}); .pt checkpoints need the y9 training package and torch."
        ) from exc
    return deploy


def checkpoint_facts(source: Any) -> ModelFacts:
    """The model facts of a ``.pt`` checkpoint (or a loaded y9 model): what training recorded, with
    ``source_sha256`` the file's own sha256 (so every artifact exported from it carries the same hash)."""
    trainer = _trainer()
    if isinstance(source, (str, Path)):
        path = Path(source)
        expect_file(path, "checkpoint", "a .pt file")
        return trainer.file_facts(path, file_sha256(path))
    return trainer.model_facts(source)


def checkpoint_digest(path: str | Path) -> str:
    """What vouches for a ``.pt`` file's tensors: ``"verified"``, ``"none"`` or ``"official"``
    (``y9train.checkpoints.deploy.digest_state``)."""
    return _trainer().digest_state(Path(path))


def load_deploy_model(source: Any, *, fuse: bool = True) -> tuple[Any, ModelFacts]:
    """A checkpoint path or an nn.Module -> (the eval-mode deployment model (aux branch dropped, fused), its
    facts)."""
    trainer = _trainer()
    if isinstance(source, (str, Path)):
        path = Path(source)
        expect_file(path, "checkpoint", "a .pt file")
        model = trainer.read_model(path)
        facts = trainer.model_facts(model, source_sha256=file_sha256(path), where=str(path))
    else:
        model = source
        facts = trainer.model_facts(model)
    return trainer.deploy_model(model, fuse=fuse), facts


class TorchBackend:
    """Runs a YOLOv9/GELAN model with PyTorch.

    Args:
        source: a ``.pt`` checkpoint path, or an ``nn.Module`` (a y9 model).
        device: None (CUDA when torch sees a GPU, else CPU), "cpu", "cuda", "cuda:N".
        imgsz: the network input, a side or (h, w); each a multiple of the largest stride (default: the trained
            size of the checkpoint's model facts).
        half: FP16 weights and inputs (default: True on CUDA, False on CPU).
        cuda_graph: capture and replay a CUDA graph per batch size (CUDA only; default True).
        fuse: fold Conv+BN / RepConvN before running (default True).
        compile: ``torch.compile`` the model (inductor; CUDA only; compiles on the first call of each batch
            size, then the compiled model is captured as a CUDA graph like the eager one).
    """

    name = "torch"
    end2end = False
    extras: tuple[str, ...] = ()
    input_name = "images"

    def __init__(
        self,
        source: Any,
        device: str | int | None = None,
        *,
        imgsz: int | tuple[int, int] | None = None,
        half: bool | None = None,
        cuda_graph: bool = True,
        fuse: bool = True,
        compile: bool = False,
    ) -> None:
        torch = import_torch()
        kind, index = parse_device(device)
        if kind == "cuda" and not torch.cuda.is_available():
            raise BackendUnavailableError(f"device={device!r} was asked for, but torch sees no CUDA GPU.")
        cuda = kind == "cuda" or (kind == "auto" and torch.cuda.is_available())
        self._torch_device = torch.device(f"cuda:{index}" if cuda else "cpu")
        self.device = str(self._torch_device)
        if half is None:
            half = cuda
        if half and not cuda:
            raise ValueError("half=True needs a CUDA device; on the CPU the torch backend runs in float32.")
        self.path = Path(source) if isinstance(source, (str, Path)) else None
        model, facts = load_deploy_model(source, fuse=fuse)
        stride = list(facts.strides)
        if imgsz is None:
            imgsz = facts.imgsz
        h, w = (imgsz, imgsz) if isinstance(imgsz, (int, np.integer)) else (int(imgsz[0]), int(imgsz[1]))
        if h <= 0 or w <= 0 or h % max(stride) or w % max(stride):
            raise ValueError(
                f"imgsz={imgsz!r} must be positive multiples of the model's largest stride {max(stride)}."
            )
        for p in model.parameters():
            p.requires_grad_(False)
        model.to(self._torch_device)
        if half:
            model.half()
        if cuda:
            torch.backends.cudnn.benchmark = True  # static shapes: pick the fastest convolution once
        if compile and not cuda:
            raise ValueError("compile=True is for CUDA devices; on the CPU the torch backend runs eagerly.")
        self.model = model
        self._run = torch.compile(model, dynamic=False) if compile else model
        self.half = bool(half)
        self.input_hw = (h, w)
        self.input_dtype = np.dtype(np.float16 if half else np.float32)
        self.batch_range = (1, MAX_BATCH)
        self.info = facts.replace(precision="fp16" if self.half else "fp32")
        self.metadata = describe_model(self.info, dynamic_batch=True)
        self.cuda_graph = bool(cuda_graph and cuda)
        self.input_channels_last = bool(cuda)  # the GpuPipeline hands over NHWC-strided batches as they are
        self._graphs: OrderedDict[int, tuple[Any, Any, Any]] = OrderedDict()
        self._pool = torch.cuda.graph_pool_handle() if self.cuda_graph else None

    # ---------------------------------------------------------------- inference
    def _forward(self, x: Any) -> Any:
        out = self._run(x)
        return out[0] if isinstance(out, (tuple, list)) else out

    def _graph(self, b: int) -> tuple[Any, Any, Any]:
        """(graph, static input, static output) for batch ``b``, captured on first use."""
        torch = import_torch()
        entry = self._graphs.get(b)
        if entry is not None:
            self._graphs.move_to_end(b)
            return entry
        if len(self._graphs) >= MAX_GRAPHS:
            self._graphs.popitem(last=False)
        h, w = self.input_hw
        dtype = torch.float16 if self.half else torch.float32
        static_in = torch.zeros((b, 3, h, w), dtype=dtype, device=self._torch_device)
        static_in = static_in.contiguous(memory_format=torch.channels_last)
        side = torch.cuda.Stream(self._torch_device)
        side.wait_stream(torch.cuda.current_stream(self._torch_device))
        with torch.cuda.stream(side):  # warm-up off the capture: cuDNN picks its algorithms here
            for _ in range(3):
                self._forward(static_in)
        torch.cuda.current_stream(self._torch_device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            static_out = self._forward(static_in)
        entry = (graph, static_in, static_out)
        self._graphs[b] = entry
        return entry

    def infer(self, batch: Any, extras: dict[str, Any] | None = None) -> dict[str, Any]:
        """``batch`` (ndarray or torch tensor [B, 3, H, W]) -> ``{"output0": [B, 4+nc, A]}``.

        numpy in, numpy (float32) out; a torch tensor in, a torch tensor on this device out (a static
        buffer when a CUDA graph is replayed: valid until the next call).
        """
        torch = import_torch()
        as_numpy = not is_torch_tensor(batch)
        x = torch.from_numpy(np.ascontiguousarray(batch)) if as_numpy else batch
        if x.ndim != 4 or tuple(x.shape[2:]) != self.input_hw or x.shape[1] != 3:
            raise ValueError(
                f"the batch has shape {tuple(x.shape)}; expected [B, 3, {self.input_hw[0]}, "
                f"{self.input_hw[1]}]."
            )
        dtype = torch.float16 if self.half else torch.float32
        with torch.no_grad():
            if self.cuda_graph:
                graph, static_in, static_out = self._graph(int(x.shape[0]))
                static_in.copy_(x, non_blocking=True)
                graph.replay()
                out = static_out
            else:
                x = x.to(self._torch_device, dtype=dtype, non_blocking=True)
                if x.is_cuda:
                    x = x.contiguous(memory_format=torch.channels_last)
                out = self._forward(x)
        if as_numpy:
            return {"output0": out.float().cpu().numpy()}
        return {"output0": out}

    def close(self) -> None:
        self._graphs.clear()
        self.model = self._run = None
