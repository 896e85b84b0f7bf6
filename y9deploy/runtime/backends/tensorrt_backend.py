"""TensorRT backend, either flavour (``tensorrt`` or ``tensorrt_rtx``): the flavour is the one the engine's
manifest names, loaded through ``y9deploy.engine.flavour``.

Before TensorRT sees the file, ``y9deploy.engine.manifest.check_manifest`` checks the flavour, the exact
version, this GPU's compute capability and the engine's size and sha256; a mismatch is one sentence.

Buffers: torch CUDA tensors when torch is installed (the Detector's GPU path hands torch tensors in and gets
torch tensors out), else device/pinned buffers from cuda-python (``y9deploy.runtime.backends.cuda``), each owning its
allocation. Tensors are bound by name (``set_tensor_address``) and run with ``execute_async_v3``. Buffers are
allocated once for the profile's largest batch, so their addresses never change, and for each batch size the
enqueue is captured once as a CUDA graph and replayed (TensorRT-RTX does this itself with its
``WHOLE_GRAPH_CAPTURE`` runtime strategy).

torch and TensorRT are imported when a TensorRTBackend is created, never at module import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from y9core.device_spec import parse_device
from y9core.errors import BackendUnavailableError, ModelFileError
from y9core.model_facts import FactsWarning, ModelFacts
from y9core.wording import count_range
from y9deploy.runtime.backends.backend import (
    END2END_OUTPUTS,
    NMS_INPUTS,
    describe_model,
    is_torch_tensor,
)
from y9deploy.runtime.backends.trt_profile import (  # noqa: F401 - re-exported: the backend's pure helpers
    Shape,
    engine_profile,
    output_shape,
    profile_batch_range,
    select_input_shape,
)


# ------------------------------------------------------------------------------------------------ the backend
class TensorRTBackend:
    """Runs a TensorRT engine (``.engine``/``.trt``/``.plan``): one built by ``y9 build-engine``, checked against its
    ``<engine>.json`` manifest before TensorRT sees it, or one built elsewhere (trtexec ...), whose facts come from
    the ONNX it was built from (``y9deploy.runtime.backends.foreign_engine``).

    Args:
        path: the engine file.
        device: None or "cuda"/"cuda:N" (TensorRT runs only on NVIDIA GPUs).
        cuda_graph: replay the enqueue as a CUDA graph per batch size (default True).
        use_torch: torch tensors for buffers when torch is installed (default); False forces cuda-python.
        facts: for an engine without a manifest: the ONNX it was built from, or a ``.facts.json`` sidecar
            (default: found beside the engine).
    """

    def __init__(
        self,
        path: str | Path,
        device: str | int | None = None,
        *,
        cuda_graph: bool = True,
        use_torch: bool | None = None,
        facts: str | Path | None = None,
    ) -> None:
        from y9deploy.engine.manifest import manifest_path

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"engine file {self.path} does not exist.")
        kind, index = parse_device(device)
        if kind == "cpu":
            raise ValueError(
                f"{self.path.name} is a TensorRT engine, which runs only on an NVIDIA GPU, not device='cpu'."
            )
        self.manifest: Any = None
        self.facts_source: Path | None = None
        if manifest_path(self.path).is_file():
            flavour = self._check_manifest(index)
        else:
            flavour = self._check_foreign(index, facts)
        self.flavour = flavour
        self.name = flavour.name
        self.device = f"cuda:{index}"
        self._index = index
        trt = flavour.trt
        self._torch = _maybe_torch() if use_torch is not False else None
        if use_torch and self._torch is None:
            raise BackendUnavailableError("use_torch=True was asked for, but torch is not installed.")
        if self._torch is not None:
            self._torch_device = self._torch.device(self.device)
            self._torch.cuda.set_device(self._torch_device)
        else:
            from y9deploy.runtime.backends import cuda

            cuda.set_device(index)
            self._stream = cuda.Stream()
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._runtime = trt.Runtime(self._logger)
        self.engine = self._runtime.deserialize_cuda_engine(self.path.read_bytes())
        if self.engine is None:
            why = "although its manifest matches" if self.manifest is not None else (
                "(without a manifest, the TensorRT version and GPU it was built for are not known: it may come from "
                "another TensorRT version or GPU)")  # fmt: skip
            raise ModelFileError(
                f"{flavour.display} could not deserialize {self.path} {why}; the file is damaged, was built by "
                "another TensorRT or for another GPU: rebuild it with `y9 build-engine` or trtexec on this machine."
            )
        self._rtx_graphs = False
        if flavour.is_rtx and cuda_graph and hasattr(self.engine, "create_runtime_config"):
            config = self.engine.create_runtime_config()
            config.cuda_graph_strategy = trt.CudaGraphStrategy.WHOLE_GRAPH_CAPTURE
            self.context = self.engine.create_execution_context(config)
            self._rtx_graphs = True
        else:
            self.context = self.engine.create_execution_context()
        if self.context is None:
            raise ModelFileError(f"{flavour.display} could not create an execution context for {self.path}.")
        self.cuda_graph = bool(cuda_graph) and not self._rtx_graphs
        self._describe_io(trt)
        self._allocate()
        self._graphs: dict[int, Any] = {}
        self._shape_b: int | None = None

    # ---------------------------------------------------------------- checks before deserialization
    def _check_manifest(self, index: int) -> Any:
        """The manifest's checks (flavour, version, GPU, size, sha256); returns the flavour to load."""
        from y9deploy.engine.flavour import load_flavour
        from y9deploy.engine.gpu import current_compute_capability
        from y9deploy.engine.manifest import check_manifest, read_manifest

        flavour = load_flavour(read_manifest(self.path).flavour)
        self.manifest = check_manifest(
            self.path,
            flavour=flavour.name,
            version=flavour.version,
            compute_capability=current_compute_capability(index),
        )
        return flavour

    def _check_foreign(self, index: int, facts: str | Path | None) -> Any:
        """A manifest-less engine (trtexec ...): facts from its ONNX or sidecar, said once what is unchecked, then
        the GPU check; returns the installed flavour to load it with."""
        import warnings

        from y9core.errors import EngineMismatchError
        from y9deploy.engine.flavour import load_flavour
        from y9deploy.engine.gpu import current_compute_capability
        from y9deploy.runtime.backends.foreign_engine import (
            find_facts_source,
            read_source_facts,
            unchecked_note,
        )

        self.facts_source = find_facts_source(self.path, facts)
        claimed = read_source_facts(self.facts_source)
        warnings.warn(unchecked_note(self.path, self.facts_source, claimed), FactsWarning, stacklevel=5)
        if current_compute_capability(index) is None:
            raise EngineMismatchError(
                f"{self.path} is a TensorRT engine, which runs only on an NVIDIA GPU, and this machine has none "
                f"(GPU {index}); its model facts, from {self.facts_source.name}, are fine: run it on the GPU it "
                f"was built for, or run {self.facts_source.stem}.onnx with onnxruntime here."
            )
        return load_flavour(None)

    # ---------------------------------------------------------------- description
    def _describe_io(self, trt: Any) -> None:
        where = str(self.path)
        inputs, outputs = [], []
        for i in range(self.engine.num_io_tensors):
            name = self.engine.get_tensor_name(i)
            mode = self.engine.get_tensor_mode(name)
            dtype = np.dtype(trt.nptype(self.engine.get_tensor_dtype(name)))
            shape = tuple(int(d) for d in self.engine.get_tensor_shape(name))
            (inputs if mode == trt.TensorIOMode.INPUT else outputs).append((name, shape, dtype))
        image = next((t for t in inputs if t[0] == "images"), None) or next(
            (t for t in inputs if len(t[1]) == 4), None
        )
        if image is None:
            raise ModelFileError(f"{where} has no 4-D image input (expected 'images' [B, 3, H, W]).")
        self.input_name, in_shape, self.input_dtype = image
        self.profile: tuple[Shape, Shape, Shape] = engine_profile(self.engine, self.input_name, in_shape)
        self.batch_range = profile_batch_range(self.profile)
        full = select_input_shape(self.profile, self.batch_range[1], where=where)
        self.input_hw = (int(full[2]), int(full[3]))
        self.extras = tuple(n for n, _, _ in inputs if n in NMS_INPUTS)
        self._extra_types = {n: dt for n, _, dt in inputs if n in NMS_INPUTS}
        self._outputs = {n: (s, dt) for n, s, dt in outputs}
        self.output_names = [n for n, _, _ in outputs]
        self.end2end = set(END2END_OUTPUTS).issubset(self.output_names)
        nc = None
        if not self.end2end:
            first = self._outputs[self.output_names[0]][0]
            nc = int(first[1]) - 4 if len(first) == 3 and first[1] > 0 else None
        if self.manifest is not None:
            from y9deploy.engine.manifest import manifest_path

            self.info: ModelFacts = self.manifest.model_facts(manifest_path(self.path))
            self.info.check_classes(nc, str(self.path))
            engine = self.manifest.to_dict()
        else:
            from y9deploy.runtime.backends.foreign_engine import read_source_facts

            source = self.facts_source
            self.info = read_source_facts(source, input_hw=self.input_hw if source.suffix == ".onnx" else None, nc=nc)
            self.info = self.info.replace(precision="fp16" if self.input_dtype == np.float16 else self.info.precision,
                                          end2end=self.end2end)  # fmt: skip
            engine = {"manifest": None, "facts_source": str(source)}
        self.metadata = describe_model(self.info, engine=engine)

    def _allocate(self) -> None:
        """Buffers for the largest batch of the profile; their addresses are bound once and never change."""
        bmax = self.batch_range[1]
        in_shape = select_input_shape(self.profile, bmax, where=str(self.path))
        self.context.set_input_shape(self.input_name, in_shape)
        shapes = {self.input_name: (in_shape, self.input_dtype)}
        self._host_extras: dict[str, np.ndarray] = {}
        for name in self.extras:
            self.context.set_input_shape(name, (1,))
            if self.engine.is_shape_inference_io(name):  # a shape tensor: TensorRT reads it from host memory
                self._host_extras[name] = np.zeros((1,), self._extra_types[name])
                self.context.set_tensor_address(name, int(self._host_extras[name].ctypes.data))
            else:
                shapes[name] = ((1,), self._extra_types[name])
        if self._host_extras:
            self.cuda_graph = False  # host-side values would be frozen into a captured graph
        for name in self.output_names:
            shapes[name] = (
                tuple(int(d) for d in self.context.get_tensor_shape(name)),
                self._outputs[name][1],
            )
        self._buffers: dict[str, Any] = {}
        self._host: dict[str, Any] = {}
        for name, (shape, dtype) in shapes.items():
            if self._torch is not None:
                tdtype = getattr(self._torch, np.dtype(dtype).name)
                buf = self._torch.empty(shape, dtype=tdtype, device=self._torch_device)
                ptr = buf.data_ptr()
            else:
                from y9deploy.runtime.backends import cuda

                nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
                buf = cuda.DeviceBuffer(nbytes)
                self._host[name] = cuda.PinnedBuffer(nbytes)
                ptr = buf.ptr
            self._buffers[name] = buf
            if not self.context.set_tensor_address(name, int(ptr)):
                raise ModelFileError(f"{self.path}: TensorRT refused the address of tensor {name}.")
        self._shapes = shapes

    # ---------------------------------------------------------------- inference
    def _stream_ptr(self) -> int:
        if self._torch is not None:
            return int(self._torch.cuda.current_stream(self._torch_device).cuda_stream)
        return self._stream.ptr

    def _set_batch(self, b: int) -> None:
        if self._shape_b != b:
            shape = select_input_shape(self.profile, b, where=str(self.path))
            if not self.context.set_input_shape(self.input_name, shape):
                raise ValueError(f"{self.path}: TensorRT refused the input shape {shape}.")
            self._shape_b = b

    def _enqueue(self, b: int) -> None:
        """Run the engine for batch ``b`` on the current stream (graph replay when captured)."""
        self._set_batch(b)
        if not self.cuda_graph:
            self._execute()
            return
        graph = self._graphs.get(b)
        if graph is None:
            self._execute()  # one plain enqueue first: TensorRT finishes deferred shape work outside capture
            graph = self._capture()
            self._graphs[b] = graph
        if self._torch is not None:
            graph.replay()
        else:
            graph.launch(self._stream)

    def _execute(self) -> None:
        if not self.context.execute_async_v3(self._stream_ptr()):
            raise RuntimeError(
                f"TensorRT execute_async_v3 failed for {self.path} (see the TensorRT log above)."
            )

    def _capture(self) -> Any:
        if self._torch is not None:
            torch = self._torch
            torch.cuda.current_stream(self._torch_device).synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._execute()
            return graph
        from y9deploy.runtime.backends import cuda

        self._stream.synchronize()
        graph = cuda.CudaGraph()
        graph.capture(self._stream, self._execute)
        return graph

    def _extras_to_device(self, extras: dict[str, Any] | None) -> None:
        for name in self.extras:
            if not extras or name not in extras:
                continue
            value = np.asarray([extras[name]], dtype=self._extra_types[name])
            if name in self._host_extras:
                self._host_extras[name][...] = value
            elif self._torch is not None:
                self._buffers[name].copy_(self._torch.from_numpy(value), non_blocking=False)
            else:
                from y9deploy.runtime.backends import cuda

                self._host[name].view(value.shape, value.dtype)[...] = value
                cuda.copy_htod(self._buffers[name], self._host[name], value.nbytes, self._stream)

    def infer(self, batch: Any, extras: dict[str, Any] | None = None) -> dict[str, Any]:
        """``batch`` ([B, 3, H, W], numpy or a CUDA torch tensor) -> outputs by name (views of static
        buffers: valid until the next call)."""
        b = int(batch.shape[0])
        lo, hi = self.batch_range
        if not lo <= b <= hi:
            raise ValueError(f"{self.path} accepts batches of {count_range(lo, hi, 'image')} (its profile), not {b}.")
        if tuple(batch.shape[1:]) != (3, *self.input_hw):
            raise ValueError(
                f"the batch has shape {tuple(batch.shape)}; expected [B, 3, {self.input_hw[0]}, "
                f"{self.input_hw[1]}] for {self.path.name}."
            )
        self._extras_to_device(extras)
        if self._torch is not None:
            return self._infer_torch(batch, b)
        return self._infer_host(np.asarray(batch), b)

    def _infer_torch(self, batch: Any, b: int) -> dict[str, Any]:
        torch = self._torch
        as_numpy = not is_torch_tensor(batch)
        x = torch.from_numpy(np.ascontiguousarray(batch)) if as_numpy else batch
        self._buffers[self.input_name][:b].copy_(x, non_blocking=True)
        self._enqueue(b)
        outs = {n: self._buffers[n][:b] for n in self.output_names}
        if as_numpy:
            return {n: t.cpu().numpy() for n, t in outs.items()}
        return outs

    def _infer_host(self, batch: np.ndarray, b: int) -> dict[str, np.ndarray]:
        from y9deploy.runtime.backends import cuda

        shape, dtype = self._shapes[self.input_name]
        host_in = self._host[self.input_name].view((b, *shape[1:]), dtype)
        np.copyto(host_in, batch, casting="same_kind")
        cuda.copy_htod(
            self._buffers[self.input_name], self._host[self.input_name], host_in.nbytes, self._stream
        )
        self._enqueue(b)
        result = {}
        for name in self.output_names:
            oshape, odtype = self._shapes[name]
            view = self._host[name].view((b, *oshape[1:]), odtype)
            cuda.copy_dtoh(self._host[name], self._buffers[name], view.nbytes, self._stream)
            result[name] = view
        self._stream.synchronize()
        return result

    def close(self) -> None:
        """Free graphs, context, engine and buffers (in that order)."""
        self._graphs.clear()
        self.context = None
        self.engine = None
        for buf in getattr(self, "_buffers", {}).values():
            if hasattr(buf, "free"):
                buf.free()
        for buf in getattr(self, "_host", {}).values():
            buf.free()
        self._buffers, self._host = {}, {}


def _maybe_torch() -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None
