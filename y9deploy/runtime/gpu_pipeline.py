"""The Detector's GPU path (torch on CUDA): frames -> Detections with everything but the frame upload and the
download of the detections on the device, on one CUDA stream.

1. pre-processing, three ways (``pre``):
   - "hybrid" (the default): letterboxed on the CPU by a thread pool into a reused pinned uint8 buffer
     (``preprocess.letterbox_batch_u8``; OpenCV releases the GIL), uploaded (a 640x640 image is 1.2 MB where a
     1080p frame is 6.2 MB), then flipped to RGB, transposed and normalised on the GPU (bit-equal to
     ``preprocess.prepare``);
   - "gpu": the uint8 frames are copied into a reused pinned buffer and uploaded whole, then letterboxed,
     flipped and normalised on the GPU (``gpu_ops.prepare_torch``; within one grey level of OpenCV);
   - "cpu": the whole blob is made on the CPU (``preprocess.prepare``) and uploaded (4x the bytes of hybrid);
2. inference: ``backend.infer`` on the device tensor (a CUDA graph replay on the torch and TensorRT backends);
3. post-processing (``post``): batched decode + NMS on the GPU, "gpu" and "auto" (on an H200 it beats the host
   path at every batch size): replayed as CUDA graphs (``runtime.graph_post``: a few launches and one download
   of the rows, 0.5-0.7 ms per call at batch 1 and 64 with ~100 candidates per frame) when triton imports, else
   the eager ``runtime.gpu_postprocess``; the rows are turned into Detections for the whole batch at once
   (``postprocess.batch_to_detections``). With "cpu", the raw output is downloaded (as float32: numpy's float16
   arithmetic is slow) and decoded + NMS'd on the host (``postprocess.postprocess``). End-to-end outputs are
   downloaded as they are (a few KB).

``run_stream`` (``Detector.predict_stream``) pipelines a sequence of batches (``runtime.gpu_stream``): the host
letterbox and upload of the next batch run in a background thread into the second of two staging slots while
the device works on the current one, and the device gets batch i+1 before the host builds the Detections of
batch i.

Every buffer is reused between calls (bounded caches), so memory does not grow.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from y9deploy.runtime.options import PredictOptions

PRE, INFER, POST = "pre", "infer", "post"


def torch_cuda_ready() -> bool:
    """True when torch is installed and sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class GpuPipeline:
    """Pre-process, infer and post-process one batch on a CUDA device (see the module docstring).

    Args:
        backend: a CUDA backend (its ``infer`` takes and returns torch CUDA tensors).
        info: the model's ModelInfo (letterbox settings, names).
        stream: the torch CUDA stream to run on (created when None).
        pre: "hybrid", "gpu" or "cpu" (see the module docstring).
        pre_on_gpu: the older switch: True means pre="gpu", False pre="cpu" (used when ``pre`` is None).
        post: "auto" (host NMS up to ``HOST_POST_MAX`` images, else GPU; 0: always GPU), "cpu" or "gpu".
        workers: threads of the CPU letterbox (default: up to 16, one per core).
        device: torch device (default: the backend's); tests pass "cpu" to run the same code on the CPU.
        graph_post: GPU post-processing replayed as CUDA graphs (``runtime.graph_post``): None (default) when
            the device is CUDA, triton imports and ``post`` is not "cpu" (a failure then falls back to the
            eager GPU path with a warning); True to require it (on the CPU: run its steps eagerly, the tests
            with Triton's interpreter); False for the eager ``gpu_postprocess`` path.
    """

    HOST_POST_MAX = 0  # measured on an H200 box: the GPU path wins from batch 1 (docs/benchmarks.md)

    def __init__(
        self,
        backend: Any,
        info: Any,
        *,
        stream: Any = None,
        pre: str | None = None,
        pre_on_gpu: bool | None = None,
        post: str = "auto",
        workers: int | None = None,
        device: Any = None,
        graph_post: bool | None = None,
    ) -> None:
        import torch

        self._torch = torch
        self.backend = backend
        self.info = info
        self.names = list(info.names)
        self.imgsz = tuple(backend.input_hw)
        self.device = torch.device(device or backend.device)
        self.cuda = self.device.type == "cuda"
        self.stream = (stream or torch.cuda.Stream(self.device)) if self.cuda else None
        self.dtype = torch.float16 if np.dtype(backend.input_dtype) == np.float16 else torch.float32
        if pre is None:
            pre = "hybrid" if pre_on_gpu is None else ("gpu" if pre_on_gpu else "cpu")
        if pre not in ("hybrid", "gpu", "cpu") or post not in ("auto", "cpu", "gpu"):
            raise ValueError(
                f"pre={pre!r}, post={post!r}; expected pre hybrid|gpu|cpu and post auto|cpu|gpu."
            )
        self.pre, self.post = pre, post
        self.pre_on_gpu = pre == "gpu"
        self._staging: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._slots: list[Any] = [None, None]  # the two staging buffers of stream()
        self._stager: ThreadPoolExecutor | None = None  # stream(): stages the next chunk in the background
        self._host_blob: Any = None
        self._stream_slots: Any = None  # runtime.gpu_stream.StreamSlots, made by the first stream
        from y9deploy.runtime.gpu_stream import HostProfile

        self.host_profile = HostProfile()  # host time per step of predict_stream
        self.graph_post = graph_post
        self._graph_post: Any = None
        if post != "cpu" and not backend.end2end and graph_post is not False:
            from y9deploy.runtime.gpu_postprocess import triton_scan_ready

            if graph_post or (self.cuda and triton_scan_ready()):
                from y9deploy.runtime.graph_post import GraphPost

                self._graph_post = GraphPost(len(self.names), self.device, graphs=self.cuda)
        self.workers = workers or min(16, os.cpu_count() or 1)
        self._pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="y9-pre") if self.workers > 1 else None
        )

    def close(self) -> None:
        if self._stager is not None:
            self._stager.shutdown(wait=True)
            self._stager = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._staging.clear()
        self._slots = [None, None]
        self._stream_slots = None
        self._host_blob = None
        if self._graph_post is not None:
            self._graph_post.close()

    # ---------------------------------------------------------------- one batch
    def run(self, frames: list[np.ndarray], padded: int, opts: PredictOptions, timer: Any) -> list[Any]:
        """frames (list of ndarray[H, W, 3] uint8 BGR) -> list of Detections (``padded`` >= len(frames): the
        batch the model is called with)."""
        torch = self._torch
        ctx = torch.cuda.stream(self.stream) if self.cuda else _nullcontext()
        with ctx:
            timer.mark("start")
            if self.pre == "hybrid":
                blob, infos = self._pre_hybrid(frames)
            elif self.pre == "gpu":
                blob, infos = self._pre_gpu(frames)
            else:
                blob, infos = self._pre_cpu(frames, padded)
            if blob.shape[0] < padded:
                blob = torch.cat([blob, blob.new_zeros((padded - blob.shape[0], *blob.shape[1:]))])
            timer.mark(PRE)
            outputs = self.backend.infer(blob, opts.extras(self.backend.extras))
            timer.mark(INFER)
            dets = self._detections(self._post_submit(outputs, len(frames), opts), infos)
            timer.mark(POST)
        return dets

    def _pinned(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A reused page-locked host tensor of ``shape`` (at most two shapes kept)."""
        torch = self._torch
        key = (*shape, str(dtype))
        buf = self._staging.get(key)
        if buf is None:
            if len(self._staging) >= 2:
                self._staging.popitem(last=False)
            buf = torch.empty(shape, dtype=dtype, pin_memory=self.cuda)
            self._staging[key] = buf
        else:
            self._staging.move_to_end(key)
        return buf

    def _upload(self, frames: list[np.ndarray]) -> Any:
        """Same-size frames -> a uint8 device tensor [B, H, W, 3] (else a list of [H, W, 3] tensors).

        The frames are copied into a reused pinned buffer by the thread pool (numpy releases the GIL) in up to
        four chunks; each chunk's transfer starts as soon as it is copied, overlapping the next chunk's copy.
        """
        torch = self._torch
        if len({f.shape for f in frames}) != 1:
            return [
                torch.from_numpy(np.ascontiguousarray(f)).to(self.device, non_blocking=True) for f in frames
            ]
        n = len(frames)
        staging = self._pinned((n, *frames[0].shape), torch.uint8)
        host = staging.numpy()
        if not self.cuda:
            for k, f in enumerate(frames):
                np.copyto(host[k], f)
            return staging
        dev = torch.empty(staging.shape, dtype=torch.uint8, device=self.device)
        step = max(1, -(-n // 4))
        for a in range(0, n, step):
            b = min(a + step, n)
            if self._pool is None or b - a == 1:
                for k in range(a, b):
                    np.copyto(host[k], frames[k])
            else:
                list(self._pool.map(lambda k: np.copyto(host[k], frames[k]), range(a, b)))
            dev[a:b].copy_(staging[a:b], non_blocking=True)
        return dev

    def _pre_gpu(self, frames: list[np.ndarray]) -> tuple[Any, list[Any]]:
        lb = self.info.letterbox
        kwargs = dict(scaleup=bool(lb.get("scaleup", True)), stride=int(lb.get("stride", 32)))
        uploaded = self._upload(frames)
        if isinstance(uploaded, list) or len(frames) == 1:
            from y9deploy.gpu_ops import prepare_torch

            return prepare_torch(uploaded, self.imgsz, dtype=self.dtype, color=lb.get("color", 114), **kwargs)
        from y9deploy.gpu_ops import letterbox_batch_torch

        return letterbox_batch_torch(
            uploaded, self.imgsz, dtype=self.dtype, color=lb.get("color", 114), **kwargs
        )

    def _split(self, n: int) -> list[tuple[int, int]]:
        step = -(-n // (self.workers if self._pool is not None else 1))
        return [(a, min(a + step, n)) for a in range(0, n, step)]

    def _pre_hybrid(self, frames: list[np.ndarray]) -> tuple[Any, list[Any]]:
        """CPU letterbox (uint8, thread pool) -> pinned -> upload -> RGB, CHW, /255 on the device."""
        h, w = self.imgsz
        staging = self._pinned((len(frames), h, w, 3), self._torch.uint8)
        infos = self._letterbox_u8(frames, staging.numpy())
        return self._u8_to_blob(staging), infos

    def _letterbox_u8(self, frames: list[np.ndarray], host: np.ndarray) -> list[Any]:
        """frames -> host (ndarray[n, h, w, 3] uint8, letterboxed BGR) by the thread pool; their LetterboxInfo."""
        from y9deploy.preprocess import letterbox_batch_u8

        lb = self.info.letterbox
        kwargs = dict(
            scaleup=bool(lb.get("scaleup", True)),
            stride=int(lb.get("stride", 32)),
            color=lb.get("color", 114),
        )
        parts = self._split(len(frames))
        if len(parts) == 1:
            return letterbox_batch_u8(frames, self.imgsz, out=host, **kwargs)[1]
        futures = [
            self._pool.submit(letterbox_batch_u8, frames[a:b], self.imgsz, out=host[a:b], **kwargs)
            for a, b in parts
        ]
        return [i for f in futures for i in f.result()[1]]

    def _u8_to_blob(self, staging: Any, upload: bool = True) -> Any:
        """staging (Tensor[n, h, w, 3] uint8 BGR, pinned; already on the device when ``upload`` is False) ->
        uploaded -> Tensor[n, 3, h, w] RGB 0..1: contiguous NCHW, or NCHW with channels_last strides (no
        transpose: the flip and the division run on the HWC layout) when the backend takes that
        (``input_channels_last``: the torch backend on CUDA)."""
        dev = staging.to(self.device, non_blocking=True) if self.cuda and upload else staging
        # float32 division then rounding to the input dtype: bit-equal to preprocess.prepare
        if getattr(self.backend, "input_channels_last", False):
            return dev.flip(3).div(255).to(self.dtype).permute(0, 3, 1, 2)
        return dev.permute(0, 3, 1, 2).flip(1).float().div_(255).to(self.dtype).contiguous()

    def _pre_cpu(self, frames: list[np.ndarray], padded: int) -> tuple[Any, list[Any]]:
        h, w = self.imgsz
        blob = self._pinned((padded, 3, h, w), self.dtype)
        infos = self._prepare_into(frames, blob.numpy())
        return blob.to(self.device, non_blocking=True), infos

    def _prepare_into(self, frames: list[np.ndarray], host: np.ndarray) -> list[Any]:
        """frames -> host[:n] (ndarray[>= n, 3, h, w], the input blob) by the thread pool; their LetterboxInfo."""
        from y9deploy.preprocess import prepare

        lb = self.info.letterbox
        kwargs = dict(
            dtype=host.dtype,
            scaleup=bool(lb.get("scaleup", True)),
            stride=int(lb.get("stride", 32)),
            color=lb.get("color", 114),
        )
        n = len(frames)
        if self._pool is None or n == 1:
            return prepare(frames, self.imgsz, out=host[:n], **kwargs)[1]
        step = -(-n // self.workers)
        parts = [(s, min(s + step, n)) for s in range(0, n, step)]
        futures = [
            self._pool.submit(prepare, frames[a:b], self.imgsz, out=host[a:b], **kwargs) for a, b in parts
        ]
        return [i for f in futures for i in f.result()[1]]

    # ---------------------------------------------------------------- pipelined stream (runtime.gpu_stream)
    def run_stream(
        self, chunks: Iterator[tuple[list[np.ndarray], int, Any]], opts: PredictOptions, timer: Any
    ) -> Any:
        """(frames, padded, tag) chunks -> (Detections list, tag) per chunk, in order, the CPU pre-processing of
        chunk i+1 overlapping the device work of chunk i (``runtime.gpu_stream.stream_chunks``)."""
        from y9deploy.runtime.gpu_stream import stream_chunks

        return stream_chunks(self, chunks, opts, timer)

    def _stage(self, frames: list[np.ndarray], padded: int, slot: int) -> tuple[Any, list[Any]]:
        """Stream stage thread: host pre-processing into staging slot ``slot`` and its upload
        (``runtime.gpu_stream.stage``)."""
        from y9deploy.runtime.gpu_stream import stage

        return stage(self, frames, padded, slot)

    # ---------------------------------------------------------------- post-processing
    def _detections(self, post: Any, infos: list[Any]) -> list[Any]:
        """A PendingRows -> Detections per frame (one vectorised pass for a whole graph-post batch)."""
        if post.ready is None:
            from y9deploy.postprocess import batch_to_detections

            return batch_to_detections(*post.block(), infos, self.names)
        from y9deploy.runtime.detector import to_detections

        return [to_detections(r, info, self.names) for r, info in zip(post.ready, infos)]

    def _post_submit(self, outputs: dict[str, Any], n: int, opts: PredictOptions) -> Any:
        """Start post-processing the first ``n`` images of ``outputs``: a PendingRows whose ``rows()`` gives one
        ndarray[N, 6] per image. The CUDA-graph path (``runtime.graph_post``) returns before the download
        completes; the others compute the rows at once."""
        from y9deploy.runtime.graph_post import PendingRows

        if self._graph_post is not None and not self.backend.end2end:
            pred = outputs["output0"] if "output0" in outputs else next(iter(outputs.values()))
            if hasattr(pred, "cpu") and pred.device == self.device:
                try:
                    return self._graph_post.submit(pred, n, opts)
                except Exception as exc:  # noqa: BLE001 - a kernel that cannot build here must not stop us
                    if self.graph_post is True:
                        raise
                    import warnings

                    warnings.warn(
                        f"the CUDA-graph post-processing failed on this machine ({type(exc).__name__}: {exc}); "
                        "using the eager GPU post-processing.",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    self._graph_post = None
        return PendingRows(n, ready=self._post(outputs, n, opts))

    def _post(self, outputs: dict[str, Any], n: int, opts: PredictOptions) -> list[np.ndarray]:
        from y9deploy.runtime.detector import host_rows
        from y9deploy.runtime.gpu_postprocess import batched_postprocess_torch

        if self.backend.end2end:
            host = {
                k: (v[:n].cpu().numpy() if hasattr(v, "cpu") else np.asarray(v)[:n])
                for k, v in outputs.items()
            }
            return host_rows(host, n, opts, end2end=True)
        pred = outputs["output0"] if "output0" in outputs else next(iter(outputs.values()))
        on_host = self.post == "cpu" or (self.post == "auto" and n <= self.HOST_POST_MAX)
        if not hasattr(pred, "cpu") or on_host:
            pred = pred[:n].float().cpu().numpy() if hasattr(pred, "cpu") else np.asarray(pred)[:n]
            return host_rows({"output0": pred}, n, opts, end2end=False)
        return batched_postprocess_torch(
            pred[:n],
            conf=opts.conf,
            iou=opts.iou,
            agnostic=opts.agnostic,
            max_det=opts.max_det,
            classes=opts.classes,
        )


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
