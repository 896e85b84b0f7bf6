"""ONNX Runtime backend: the CUDA execution provider when present (IO binding on the GPU), else the CPU.

Needs ``onnxruntime`` (CPU) or ``onnxruntime-gpu`` (CUDA). On the GPU path the Detector hands torch CUDA
tensors; inputs and outputs are bound to device memory (``io_binding``) so nothing crosses PCIe except the
frame going in and the detections coming out, and ONNX Runtime runs on the Detector's torch stream.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from y9core.device_spec import parse_device
from y9core.errors import BackendUnavailableError, ModelFileError
from y9core.model_facts import ModelFacts
from y9deploy.model_file.io_checks import (
    check_end2end_outputs,
    check_finite,
    check_image_input,
    check_raw_output,
    probe_batch,
)
from y9deploy.model_file.onnx_digest import note_unchecked
from y9deploy.model_file.onnx_digest import verify as verify_digest
from y9deploy.post.options import PredictOptions
from y9deploy.runtime.backends.backend import (
    END2END_OUTPUTS,
    NMS_INPUTS,
    describe_model,
    is_torch_tensor,
    metadata_strides,
    parse_metadata,
)
from y9deploy.runtime.backends.onnx_classes import end2end_classes

MAX_DYNAMIC_BATCH = 256
_ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise BackendUnavailableError(
            "onnxruntime is not installed: run 'pip install onnxruntime' (CPU) or 'pip install onnxruntime-gpu' "
            "(NVIDIA GPUs) to run .onnx models."
        ) from exc
    return onnxruntime


def _np_type(ort_type: str, where: str) -> np.dtype:
    if ort_type not in _ORT_TYPES:
        raise ModelFileError(f"{where}: tensor type {ort_type} is not supported (expected float or float16).")
    return np.dtype(_ORT_TYPES[ort_type])


def cpu_threads(threads: int | None = None) -> int | None:
    """ONNX Runtime's intra-op threads on the CPU: ``threads`` when given, else ``OMP_NUM_THREADS`` when it is a
    positive integer (the thread budget torch and OpenMP libraries take, which ONNX Runtime ignores: a process told
    to use one thread would otherwise start and spin one per core), else None (ONNX Runtime's default)."""
    if threads:
        return int(threads)
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


class OnnxRuntimeBackend:
    """Runs a y9 ONNX model (raw ``output0`` or end-to-end NMS outputs) with ONNX Runtime.

    Args:
        path: the ``.onnx`` file.
        device: None (CUDA when onnxruntime-gpu sees a GPU, else CPU), "cpu", "cuda", "cuda:N".
        threads: intra-op threads on the CPU (None: ``cpu_threads``: OMP_NUM_THREADS when set, else ONNX
            Runtime's default, one per physical core).
        stream: a CUDA stream handle (int) for ONNX Runtime to run on (the Detector's torch stream).
    """

    name = "onnxruntime"

    def __init__(
        self,
        path: str | Path,
        device: str | int | None = None,
        *,
        threads: int | None = None,
        stream: int | None = None,
    ) -> None:
        ort = import_onnxruntime()
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"ONNX model {self.path} does not exist.")
        kind, index = parse_device(device)
        available = ort.get_available_providers()
        has_cuda = "CUDAExecutionProvider" in available
        if kind == "cuda" and not has_cuda:
            raise BackendUnavailableError(
                f"device={device!r} was asked for {self.path.name}, but this onnxruntime has no "
                f"CUDAExecutionProvider (providers: {', '.join(available)}): install onnxruntime-gpu or use "
                "device='cpu'."
            )
        use_cuda = has_cuda and kind != "cpu" and _cuda_device_present()
        if kind == "cuda" and not use_cuda:
            raise BackendUnavailableError(
                f"device={device!r} was asked for {self.path.name}, but no CUDA GPU is visible."
            )
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        threads = cpu_threads(threads)
        if threads:
            options.intra_op_num_threads = threads
        if use_cuda:
            cuda_opts: dict[str, Any] = {"device_id": index, "cudnn_conv_algo_search": "EXHAUSTIVE"}
            if stream is not None:
                cuda_opts["user_compute_stream"] = str(int(stream))
            providers: list[Any] = [("CUDAExecutionProvider", cuda_opts), "CPUExecutionProvider"]
        else:
            providers = ["CPUExecutionProvider"]
        self.digest_checked = verify_digest(self.path)  # y9 exports: any changed byte is refused here
        if not self.digest_checked:
            note_unchecked(self.path)  # a y9 file without its digest entry: said once
        try:
            self.session = ort.InferenceSession(str(self.path), options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types for a bad file
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelFileError(
                f"{self.path} could not be loaded as an ONNX model ({first[:300]})."
            ) from exc
        if use_cuda and "CUDAExecutionProvider" not in self.session.get_providers():
            raise BackendUnavailableError(
                f"onnxruntime could not start its CUDA execution provider for {self.path.name} (CUDA/cuDNN libraries "
                "missing or mismatched); use device='cpu' or install the onnxruntime-gpu build matching your CUDA."
            )
        self.device = f"cuda:{index}" if use_cuda else "cpu"
        self._cuda_index = index
        self._describe_io()
        self._bindings: dict[tuple[int, ...], Any] = {}
        self._outputs_gpu: dict[int, dict[str, Any]] = {}
        # One inference of a grey image: NaN/inf weights are refused at load, not as silent empty results.
        probe = probe_batch(self.batch_range, self.input_hw, self.input_dtype)
        check_finite(str(self.path), self._run_host(probe, PredictOptions().extras(self.extras)))

    def _describe_io(self) -> None:
        where = str(self.path)
        inputs = self.session.get_inputs()
        image = next((i for i in inputs if i.name == "images"), None) or next(
            (i for i in inputs if len(i.shape) == 4), None
        )
        if image is None:
            raise ModelFileError(f"{where} has no 4-D image input (expected 'images' [B, 3, H, W]).")
        self.input_name = image.name
        self.input_dtype = _np_type(image.type, where)
        check_image_input(where, image.name, image.shape, self.input_dtype)
        b, c, h, w = image.shape
        if not (isinstance(h, int) and isinstance(w, int)) or c not in (3, "3"):
            raise ModelFileError(
                f"{where}: input {image.name} has shape {image.shape}; expected [B, 3, H, W] with a fixed H and W."
            )
        self.batch_range = (int(b), int(b)) if isinstance(b, int) and b > 0 else (1, MAX_DYNAMIC_BATCH)
        # NMS thresholds of an end2end model: graph inputs, or initializers a caller may override (their
        # defaults baked in); onnxruntime lists the latter apart.
        overridable = list(self.session.get_overridable_initializers())
        nms = [i for i in inputs + overridable if i.name in NMS_INPUTS]
        self.extras = tuple(i.name for i in nms)
        self._extra_types = {i.name: _np_type(i.type, where) for i in nms}
        unknown = [i.name for i in inputs if i.name != self.input_name and i.name not in NMS_INPUTS]
        if unknown:
            raise ModelFileError(f"{where} has inputs {unknown} that a y9 model does not have.")
        outputs = self.session.get_outputs()
        self.output_names = [o.name for o in outputs]
        self._output_meta = {o.name: (o.shape, _np_type(o.type, where)) for o in outputs}
        self.output_shapes = {o.name: list(o.shape) for o in outputs}  # symbolic dimensions as names
        self.end2end = set(END2END_OUTPUTS).issubset(self.output_names)
        if not self.end2end and len(outputs) < 1:
            raise ModelFileError(f"{where} has no outputs.")
        props = dict(self.session.get_modelmeta().custom_metadata_map)
        nc = None
        if not self.end2end:
            head = next((o for o in outputs if o.name == "output0"), outputs[0])
            nc = _raw_classes(head, where, (int(h), int(w)), props)
        else:
            check_end2end_outputs(where, {o.name: o.shape for o in outputs})
        self.info: ModelFacts = parse_metadata(props, where=where, imgsz=(int(h), int(w)), nc=nc)
        if self.end2end:
            self.info.check_classes(end2end_classes(self.path), where)
        if self.info.end2end != self.end2end or self.info.half != (self.input_dtype == np.float16):
            what = "end-to-end NMS" if self.info.end2end != self.end2end else "its precision"
            raise ModelFileError(
                f"{where}: its metadata and its graph disagree about {what} (metadata: end2end "
                f"{int(self.info.end2end)}, half {int(self.info.half)}; graph: end2end {int(self.end2end)}, input "
                f"{self.input_dtype.name}); expected a file as `y9 export` wrote it."
            )
        self.input_hw = (int(h), int(w))
        self.metadata = describe_model(self.info, props, dynamic_batch=not (isinstance(b, int) and b > 0))

    # ---------------------------------------------------------------- inference
    def _extra_feed(self, extras: dict[str, Any] | None) -> dict[str, np.ndarray]:
        feed = {}
        for name in self.extras:
            if extras and name in extras:
                feed[name] = np.asarray([extras[name]], dtype=self._extra_types[name])
        return feed

    def infer(self, batch: Any, extras: dict[str, Any] | None = None) -> dict[str, Any]:
        """``batch`` (ndarray or CUDA torch tensor [B, 3, H, W]) -> outputs by name (see runtime.backend)."""
        if isinstance(batch, np.ndarray):  # the host pipeline's blob: straight to the session
            return self._run_host(batch, extras)
        if is_torch_tensor(batch) and batch.is_cuda:
            return self._infer_gpu(batch, extras)
        if is_torch_tensor(batch):
            batch = batch.numpy()
        return self._run_host(batch, extras)

    def _run_host(self, batch: np.ndarray, extras: dict[str, Any] | None) -> dict[str, Any]:
        """One session run on host arrays (also the load-time probe, which is not an inference call)."""
        batch = np.ascontiguousarray(batch, dtype=self.input_dtype)
        feed = {self.input_name: batch, **self._extra_feed(extras)}
        values = self.session.run(self.output_names, feed)
        return dict(zip(self.output_names, values))

    def _gpu_outputs(self, b: int, device: Any) -> dict[str, Any]:
        import torch

        outs = self._outputs_gpu.get(b)
        if outs is None:
            if len(self._outputs_gpu) >= 8:  # bound the cache for callers that vary the batch a lot
                self._outputs_gpu.clear()
                self._bindings.clear()
            outs = {}
            for name, (shape, dtype) in self._output_meta.items():
                dims = [b if i == 0 else d for i, d in enumerate(shape)]
                if not all(isinstance(d, int) for d in dims):
                    raise ModelFileError(
                        f"{self.path}: output {name} has a dynamic shape {shape}; expected fixed."
                    )
                outs[name] = torch.empty(dims, dtype=getattr(torch, np.dtype(dtype).name), device=device)
            self._outputs_gpu[b] = outs
        return outs

    def _infer_gpu(self, batch: Any, extras: dict[str, Any] | None) -> dict[str, Any]:
        import torch

        torch_dtype = getattr(torch, self.input_dtype.name)
        if batch.dtype != torch_dtype or not batch.is_contiguous():
            batch = batch.to(torch_dtype).contiguous()
        b = int(batch.shape[0])
        outs = self._gpu_outputs(b, batch.device)
        binding = self.session.io_binding()
        binding.bind_input(
            self.input_name, "cuda", self._cuda_index, self.input_dtype, tuple(batch.shape), batch.data_ptr()
        )
        for name, value in self._extra_feed(extras).items():
            binding.bind_cpu_input(name, value)
        for name, tensor in outs.items():
            binding.bind_output(
                name,
                "cuda",
                self._cuda_index,
                self._output_meta[name][1],
                tuple(tensor.shape),
                tensor.data_ptr(),
            )
        # ONNX Runtime runs on the torch stream given at construction; without one, wait for torch here.
        torch.cuda.current_stream(batch.device).synchronize()
        self.session.run_with_iobinding(binding)
        return outs

    def close(self) -> None:
        self._outputs_gpu.clear()
        self._bindings.clear()
        self.session = None


def _raw_classes(head: Any, where: str, hw: tuple[int, int], props: dict[str, str]) -> int | None:
    """Check a raw head output against the input size and the metadata's strides; its class count."""
    strides = metadata_strides(props, where)
    return check_raw_output(where, head.name, head.shape, _np_type(head.type, where), hw=hw, strides=strides)


def _cuda_device_present() -> bool:
    """True when a CUDA device is visible (through torch if present, else cuda-python; False on any doubt)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        pass
    try:
        from y9deploy.runtime.backends.cuda import device_count

        return device_count() > 0
    except Exception:  # noqa: BLE001 - no bindings: let onnxruntime decide
        return True
