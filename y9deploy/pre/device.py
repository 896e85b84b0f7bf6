"""``DevicePre``: the pre-processing of the torch pipeline: frames -> the input blob on the device.

Three implementations (``pre.impl.PreImpl``):

- "hybrid": letterboxed on the host by a thread pool into a reused pinned uint8 buffer
  (``pre.host.letterbox_batch_u8``; OpenCV releases the GIL), uploaded (a 640x640 image is a fifth of the
  bytes of a 1080p frame), then flipped to RGB, transposed and normalised on the device (bit-equal to
  ``pre.host.prepare``);
- "gpu": the uint8 frames copied into a reused pinned buffer and uploaded whole, then letterboxed, flipped and
  normalised on the device (``pre.torch_letterbox``; within one grey level of OpenCV);
- "cpu": the whole blob made on the host (``pre.host.prepare``) and uploaded (4x the bytes of hybrid).

Every buffer is reused between calls (at most two pinned shapes kept), so memory does not grow. torch is
imported when a DevicePre is created.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from y9deploy.pre.impl import PreImpl
from y9deploy.pre.spec import LetterboxSpec


class DevicePre:
    """Frames -> (blob on the device, LetterboxInfo per frame).

    Args:
        impl: "hybrid", "gpu" or "cpu".
        spec: the model's letterbox parameters.
        device: the torch device.
        dtype: the blob's torch dtype (float16 or float32).
        channels_last: hand the blob with NHWC strides (the torch backend on CUDA takes that).
        workers: threads of the host letterbox (default: up to 16, one per core).
    """

    def __init__(
        self,
        impl: PreImpl | str,
        spec: LetterboxSpec,
        *,
        device: Any,
        dtype: Any,
        channels_last: bool = False,
        workers: int | None = None,
    ) -> None:
        import torch

        self.torch = torch
        self.impl = PreImpl(impl)
        if self.impl is PreImpl.HOST:
            raise ValueError("DevicePre runs 'hybrid', 'gpu' or 'cpu'; 'host' is the host pipeline's.")
        self.spec = spec
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.dtype = dtype
        self.channels_last = bool(channels_last)
        self.workers = workers or min(16, os.cpu_count() or 1)
        self.pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="y9-pre") if self.workers > 1 else None
        )
        self.staging: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
        self.staging.clear()

    def run(self, frames: list[np.ndarray], padded: int) -> tuple[Any, list[Any]]:
        """frames (ndarray[H, W, 3] uint8 BGR) -> (blob Tensor[padded, 3, h, w] on the device, zero images
        after the frames; one LetterboxInfo per frame)."""
        if self.impl is PreImpl.HYBRID:
            h, w = self.spec.imgsz
            staging = self.pinned((len(frames), h, w, 3), self.torch.uint8)
            infos = self.letterbox_u8(frames, staging.numpy())
            blob = self.to_blob(staging)
        elif self.impl is PreImpl.GPU:
            blob, infos = self._letterbox_on_device(frames)
        else:
            h, w = self.spec.imgsz
            host = self.pinned((padded, 3, h, w), self.dtype)
            infos = self.prepare_into(frames, host.numpy())
            blob = host.to(self.device, non_blocking=True)
        if blob.shape[0] < padded:
            blob = self.torch.cat([blob, blob.new_zeros((padded - blob.shape[0], *blob.shape[1:]))])
        return blob, infos

    def pinned(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A reused page-locked host tensor of ``shape`` (at most two shapes kept)."""
        key = (*shape, str(dtype))
        buf = self.staging.get(key)
        if buf is None:
            if len(self.staging) >= 2:
                self.staging.popitem(last=False)
            buf = self.torch.empty(shape, dtype=dtype, pin_memory=self.cuda)
            self.staging[key] = buf
        else:
            self.staging.move_to_end(key)
        return buf

    def _parts(self, n: int) -> list[tuple[int, int]]:
        step = -(-n // (self.workers if self.pool is not None else 1))
        return [(a, min(a + step, n)) for a in range(0, n, step)]

    def letterbox_u8(self, frames: list[np.ndarray], host: np.ndarray) -> list[Any]:
        """frames -> host (ndarray[n, h, w, 3] uint8, letterboxed BGR) by the thread pool; their LetterboxInfo."""
        from y9deploy.pre.host import letterbox_batch_u8

        kw = self.spec.kwargs()
        parts = self._parts(len(frames))
        if len(parts) == 1:
            return letterbox_batch_u8(frames, self.spec.imgsz, out=host, **kw)[1]
        futures = [
            self.pool.submit(letterbox_batch_u8, frames[a:b], self.spec.imgsz, out=host[a:b], **kw)
            for a, b in parts
        ]
        return [i for f in futures for i in f.result()[1]]

    def prepare_into(self, frames: list[np.ndarray], host: np.ndarray) -> list[Any]:
        """frames -> host[:n] (ndarray[>= n, 3, h, w], the input blob) by the thread pool; their LetterboxInfo."""
        from y9deploy.pre.host import prepare

        kw = dict(dtype=host.dtype, **self.spec.kwargs())
        n = len(frames)
        if self.pool is None or n == 1:
            return prepare(frames, self.spec.imgsz, out=host[:n], **kw)[1]
        futures = [
            self.pool.submit(prepare, frames[a:b], self.spec.imgsz, out=host[a:b], **kw)
            for a, b in self._parts(n)
        ]
        return [i for f in futures for i in f.result()[1]]

    def to_blob(self, staging: Any, upload: bool = True) -> Any:
        """staging (Tensor[n, h, w, 3] uint8 BGR, pinned; already on the device when ``upload`` is False) ->
        uploaded -> Tensor[n, 3, h, w] RGB 0..1: contiguous NCHW, or NCHW with channels_last strides (no
        transpose: the flip and the division run on the HWC layout) with ``channels_last``."""
        dev = staging.to(self.device, non_blocking=True) if self.cuda and upload else staging
        # float32 division then rounding to the input dtype: bit-equal to pre.host.prepare
        if self.channels_last:
            return dev.flip(3).div(255).to(self.dtype).permute(0, 3, 1, 2)
        return dev.permute(0, 3, 1, 2).flip(1).float().div_(255).to(self.dtype).contiguous()

    def _upload(self, frames: list[np.ndarray]) -> Any:
        """Same-size frames -> a uint8 device tensor [B, H, W, 3] (else a list of [H, W, 3] tensors).

        The frames are copied into a reused pinned buffer by the thread pool (numpy releases the GIL) in up to
        four chunks; each chunk's transfer starts as soon as it is copied, overlapping the next chunk's copy.
        """
        torch = self.torch
        if len({f.shape for f in frames}) != 1:
            return [
                torch.from_numpy(np.ascontiguousarray(f)).to(self.device, non_blocking=True) for f in frames
            ]
        n = len(frames)
        staging = self.pinned((n, *frames[0].shape), torch.uint8)
        host = staging.numpy()
        if not self.cuda:
            for k, f in enumerate(frames):
                np.copyto(host[k], f)
            return staging
        dev = torch.empty(staging.shape, dtype=torch.uint8, device=self.device)
        step = max(1, -(-n // 4))
        for a in range(0, n, step):
            b = min(a + step, n)
            if self.pool is None or b - a == 1:
                for k in range(a, b):
                    np.copyto(host[k], frames[k])
            else:
                list(self.pool.map(lambda k: np.copyto(host[k], frames[k]), range(a, b)))
            dev[a:b].copy_(staging[a:b], non_blocking=True)
        return dev

    def _letterbox_on_device(self, frames: list[np.ndarray]) -> tuple[Any, list[Any]]:
        from y9deploy.pre.torch_letterbox import letterbox_batch_torch, prepare_torch

        kw = self.spec.kwargs()
        uploaded = self._upload(frames)
        if isinstance(uploaded, list) or len(frames) == 1:
            return prepare_torch(uploaded, self.spec.imgsz, dtype=self.dtype, **kw)
        return letterbox_batch_torch(uploaded, self.spec.imgsz, dtype=self.dtype, **kw)
