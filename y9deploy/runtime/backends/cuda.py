"""A small, checked wrapper over NVIDIA's ``cuda-python`` runtime bindings (no torch, no pycuda).

Every CUDA runtime call goes through :func:`call`, which raises :class:`CudaError` with one sentence naming
the call and CUDA's own error string. Memory is owned by objects: a :class:`DeviceBuffer` or
:class:`PinnedBuffer` frees its allocation in ``free()`` (idempotent) or when garbage-collected.

cuda-python >= 12.6 is needed (``pip install cuda-python``); it needs no CUDA toolkit, only the driver.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError, Y9Error

_CUDART: Any = None


class CudaError(Y9Error, RuntimeError):
    """A CUDA runtime call failed."""


def cudart() -> Any:
    """The ``cuda.bindings.runtime`` module (or the older ``cuda.cudart``); BackendUnavailableError if missing."""
    global _CUDART
    if _CUDART is None:
        try:
            from cuda.bindings import runtime as module
        except ImportError:
            try:
                from cuda import cudart as module  # cuda-python < 12.6 layout
            except ImportError as exc:
                raise BackendUnavailableError(
                    "cuda-python is not installed: run 'pip install cuda-python' (NVIDIA's CUDA bindings, "
                    "needed for TensorRT device buffers when torch is not installed)."
                ) from exc
        _CUDART = module
    return _CUDART


def _error_text(rt: Any, err: Any) -> str:
    try:
        status, text = rt.cudaGetErrorString(err)
        return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001 - describing an error must never raise another one
        return str(err)


def call(name: str, *args: Any) -> Any:
    """Call ``cudart.<name>(*args)`` and check its status.

    cuda-python returns ``(status, *values)``; this returns ``None``, the single value, or a tuple.
    Raises:
        CudaError: the status is not ``cudaSuccess`` (the sentence names the call and the CUDA error).
    """
    rt = cudart()
    result = getattr(rt, name)(*args)
    if not isinstance(result, tuple):
        result = (result,)
    err, values = result[0], result[1:]
    if int(err) != int(rt.cudaError_t.cudaSuccess):
        raise CudaError(
            f"CUDA call {name} failed with {err.name if hasattr(err, 'name') else err}: "
            f"{_error_text(rt, err)}."
        )
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver or no device (never raises for that)."""
    try:
        return int(call("cudaGetDeviceCount"))
    except CudaError:
        return 0


def compute_capability(index: int = 0) -> str:
    """The compute capability of device ``index`` as ``"sm90"``; CudaError when there is no such device."""
    major = call("cudaDeviceGetAttribute", cudart().cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, index)
    minor = call("cudaDeviceGetAttribute", cudart().cudaDeviceAttr.cudaDevAttrComputeCapabilityMinor, index)
    return f"sm{int(major)}{int(minor)}"


def device_name(index: int = 0) -> str:
    """The name of device ``index`` (e.g. ``NVIDIA H200``)."""
    prop = call("cudaGetDeviceProperties", index)
    name = prop.name
    if isinstance(name, bytes):
        name = name.split(b"\0", 1)[0].decode(errors="replace")
    return str(name)


def driver_version() -> str:
    """The CUDA version the driver supports, e.g. ``"13.0"``; ``""`` when there is no driver."""
    try:
        v = int(call("cudaDriverGetVersion"))
    except CudaError:
        return ""
    return "" if v == 0 else f"{v // 1000}.{(v % 1000) // 10}"


def set_device(index: int) -> None:
    call("cudaSetDevice", index)


class Stream:
    """A non-blocking CUDA stream owned by this object."""

    def __init__(self) -> None:
        rt = cudart()
        self.handle = call("cudaStreamCreateWithFlags", rt.cudaStreamNonBlocking)

    @property
    def ptr(self) -> int:
        """The stream as an integer (what TensorRT's ``execute_async_v3`` takes)."""
        return int(self.handle)

    def synchronize(self) -> None:
        call("cudaStreamSynchronize", self.handle)

    def destroy(self) -> None:
        if self.handle is not None:
            handle, self.handle = self.handle, None
            call("cudaStreamDestroy", handle)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the driver may be gone already
            self.destroy()


class DeviceBuffer:
    """``nbytes`` of device memory (cudaMalloc), freed by ``free()`` or when collected."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(max(nbytes, 1))
        self.ptr: int | None = int(call("cudaMalloc", self.nbytes))

    def free(self) -> None:
        if self.ptr is not None:
            ptr, self.ptr = self.ptr, None
            call("cudaFree", ptr)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the driver may be gone already
            self.free()


class PinnedBuffer:
    """``nbytes`` of page-locked host memory (cudaMallocHost) with numpy views; freed like DeviceBuffer."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(max(nbytes, 1))
        self.ptr: int | None = int(call("cudaMallocHost", self.nbytes))
        self._raw = (ctypes.c_uint8 * self.nbytes).from_address(self.ptr)

    def view(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A numpy array of ``shape`` and ``dtype`` over the start of this buffer (no copy)."""
        dtype = np.dtype(dtype)
        need = int(np.prod(shape)) * dtype.itemsize
        if need > self.nbytes:
            raise ValueError(
                f"a view of shape {shape} {dtype} needs {need} bytes; the buffer has {self.nbytes}."
            )
        return np.frombuffer(self._raw, dtype=dtype, count=int(np.prod(shape))).reshape(shape)

    def free(self) -> None:
        if self.ptr is not None:
            ptr, self.ptr = self.ptr, None
            self._raw = None
            call("cudaFreeHost", ptr)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the driver may be gone already
            self.free()


def copy_htod(dst: DeviceBuffer | int, src: PinnedBuffer | int, nbytes: int, stream: Stream) -> None:
    """Asynchronous host -> device copy of ``nbytes`` on ``stream``."""
    rt = cudart()
    call(
        "cudaMemcpyAsync",
        _ptr(dst),
        _ptr(src),
        nbytes,
        rt.cudaMemcpyKind.cudaMemcpyHostToDevice,
        stream.handle,
    )


def copy_dtoh(dst: PinnedBuffer | int, src: DeviceBuffer | int, nbytes: int, stream: Stream) -> None:
    """Asynchronous device -> host copy of ``nbytes`` on ``stream``."""
    rt = cudart()
    call(
        "cudaMemcpyAsync",
        _ptr(dst),
        _ptr(src),
        nbytes,
        rt.cudaMemcpyKind.cudaMemcpyDeviceToHost,
        stream.handle,
    )


def _ptr(obj: Any) -> int:
    ptr = obj if isinstance(obj, int) else obj.ptr
    if ptr is None:
        raise ValueError("this CUDA buffer was already freed.")
    return int(ptr)


class CudaGraph:
    """A captured CUDA graph: ``capture(stream, fn)`` records the work ``fn()`` enqueues, ``launch`` replays it."""

    def __init__(self) -> None:
        self._graph: Any = None
        self._exec: Any = None

    def capture(self, stream: Stream, fn: Any) -> None:
        rt = cudart()
        call(
            "cudaStreamBeginCapture", stream.handle, rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        )
        try:
            fn()
        finally:
            graph = call("cudaStreamEndCapture", stream.handle)
        self._graph = graph
        self._exec = call("cudaGraphInstantiate", graph, 0)

    def launch(self, stream: Stream) -> None:
        call("cudaGraphLaunch", self._exec, stream.handle)

    def destroy(self) -> None:
        if self._exec is not None:
            ex, self._exec = self._exec, None
            call("cudaGraphExecDestroy", ex)
        if self._graph is not None:
            g, self._graph = self._graph, None
            call("cudaGraphDestroy", g)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the driver may be gone already
            self.destroy()
