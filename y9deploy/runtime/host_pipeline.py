"""``HostPipeline``: the Detector's pipeline when the work stays on the host (numpy, OpenCV): the blob made by
``pre.host.prepare``, the backend's numpy outputs post-processed by ``post.host`` (decode + NMS, or the rows
of an end-to-end model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from y9deploy.post.choice import PostImpl, choose_post
from y9deploy.pre.choice import PreImpl
from y9deploy.pre.spec import LetterboxSpec
from y9deploy.runtime.pipeline import INFER, NULL_TIMER, POST, PRE, Chunk


class HostPipeline:
    """Pre-process, infer and post-process on the host.

    Args:
        backend: the backend (its ``infer`` takes and returns numpy arrays).
        spec: the model's letterbox parameters.
        names: class names.
    """

    pre = PreImpl.HOST
    cuda = False

    def __init__(self, backend: Any, spec: LetterboxSpec, names: list[str]) -> None:
        self.backend = backend
        self.spec = spec
        self.names = list(names)
        self.post = choose_post(  # numpy outputs: HOST, or END2END
            device=str(backend.device), end2end=bool(backend.end2end), torch_tensors=False, triton=False
        )
        self.blob: np.ndarray | None = None  # the reused input buffer

    def close(self) -> None:
        self.blob = None

    def input_buffer(self, padded: int) -> np.ndarray:
        """The reused host input buffer [padded, 3, H, W] of the backend's dtype (grown, never shrunk)."""
        h, w = self.spec.imgsz
        dt = self.backend.input_dtype
        if self.blob is None or self.blob.shape[0] < padded or self.blob.dtype != dt:
            self.blob = np.zeros((padded, 3, h, w), dt)
        return self.blob[:padded]

    def run(self, frames: list[np.ndarray], padded: int, opts: Any, timer: Any = NULL_TIMER) -> list[Any]:
        from y9deploy.post.host import host_rows, to_detections
        from y9deploy.pre.host import prepare

        timer.mark("start")
        blob = self.input_buffer(padded)
        _, infos = prepare(
            frames,
            self.spec.imgsz,
            dtype=blob.dtype,
            auto=False,
            out=blob[: len(frames)],
            **self.spec.kwargs(),
        )
        timer.mark(PRE)
        outputs = self.backend.infer(blob, opts.extras(self.backend.extras))
        timer.mark(INFER)
        rows = host_rows(outputs, len(frames), opts, end2end=self.post is PostImpl.END2END)
        dets = [to_detections(r, info, self.names) for r, info in zip(rows, infos)]
        timer.mark(POST)
        return dets

    def run_stream(
        self, chunks: Iterator[Chunk], opts: Any, timer: Any = NULL_TIMER
    ) -> Iterator[tuple[list[Any], Any]]:
        """The chunks one after the other (nothing to overlap on the host)."""
        for frames, padded, tag in chunks:
            yield self.run(frames, padded, opts, timer), tag
