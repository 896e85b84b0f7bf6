"""``HostPipeline``: the Detector's pipeline when the work stays on the host (numpy, OpenCV): the blob made by
``pre.host.prepare``, the backend's numpy outputs post-processed on the host (``post.runner.PostRunner``: decode +
NMS, or the rows of an end-to-end model). Built by ``runtime.frame_pipeline.build_pipeline``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from y9deploy.post.runner import PostRunner
from y9deploy.pre.impl import PreImpl
from y9deploy.pre.spec import LetterboxSpec
from y9deploy.runtime.pipeline import INFER, NULL_TIMER, POST, PRE, Chunk


class HostPipeline:
    """Pre-process, infer and post-process on the host.

    Args:
        backend: the backend (its ``infer`` takes and returns numpy arrays).
        spec: the model's letterbox parameters.
        names: class names.
        postprocess: the Detector's ``postprocess`` option (numpy outputs: the host implementation whatever it
            says, or the end-to-end rows).
    """

    kind = "host"
    pre = PreImpl.HOST
    cuda = False

    def __init__(
        self, backend: Any, spec: LetterboxSpec, names: list[str], *, postprocess: str = "auto"
    ) -> None:
        self.backend = backend
        self.spec = spec
        self.letterbox = spec.kwargs()  # decided once: the model's letterbox arguments for every batch
        self.extras = tuple(backend.extras)  # an end-to-end model's NMS inputs (none for a raw model)
        self.names = list(names)
        # numpy outputs: never the CUDA-graph implementation, so the rule sees the same facts for every batch
        self.post_runner = PostRunner(nc=len(self.names), names=self.names, end2end=bool(backend.end2end),
                                      option=postprocess, graphs=False)  # fmt: skip
        self.blob: np.ndarray | None = None  # the reused input buffer
        self._frame_buffers: tuple[np.ndarray, list[np.ndarray]] | None = None  # the frame plans' blob and planes

    @property
    def post(self) -> Any:
        """The post-processing implementation in use (``y9core.post.choice.PostImpl``)."""
        return self.post_runner.impl

    def close(self) -> None:
        self.blob = self._frame_buffers = None
        self.post_runner.close()

    def input_buffer(self, padded: int) -> np.ndarray:
        """The reused host input buffer [padded, 3, H, W] of the backend's dtype (grown, never shrunk)."""
        h, w = self.spec.imgsz
        dt = self.backend.input_dtype
        if self.blob is None or self.blob.shape[0] < padded or self.blob.dtype != dt:
            self.blob = np.zeros((padded, 3, h, w), dt)
        return self.blob[:padded]

    def frame_buffers(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The input blob [padded, 3, H, W] and three uint8 planes [H, W] that every frame plan of this pipeline
        fills (one frame at a time: a Detector serves one thread); made once."""
        if self._frame_buffers is None:
            (h, w), padded = self.spec.imgsz, max(1, int(self.backend.batch_range[0]))
            planes = [np.empty((h, w), np.uint8) for _ in range(3)]
            self._frame_buffers = (np.zeros((padded, 3, h, w), self.backend.input_dtype), planes)
        return self._frame_buffers

    def frame_plan(self, frame: np.ndarray, opts: Any) -> Any:
        """The way of the frames of ``frame``'s shape under ``opts``, decided once (``runtime.frame_plan``); None
        where only ``run`` can take them."""
        from y9deploy.runtime.frame_plan import build_frame_plan

        return build_frame_plan(self, frame, opts)

    def run(self, frames: list[np.ndarray], padded: int, opts: Any, timer: Any = NULL_TIMER) -> list[Any]:
        from y9deploy.pre.host import prepare

        timed = timer is not NULL_TIMER  # no calls to a timer that records nothing
        if timed:
            timer.mark("start")
        blob = self.input_buffer(padded)
        _, infos = prepare(
            frames, self.spec.imgsz, dtype=blob.dtype, auto=False, out=blob[: len(frames)], **self.letterbox
        )
        if timed:
            timer.mark(PRE)
        outputs = self.backend.infer(blob, opts.extras(self.extras) if self.extras else None)
        if timed:
            timer.mark(INFER)
        dets = self.post_runner.run(outputs, len(frames), opts, infos)
        if timed:
            timer.mark(POST)
        return dets

    def run_stream(
        self, chunks: Iterator[Chunk], opts: Any, timer: Any = NULL_TIMER
    ) -> Iterator[tuple[list[Any], Any]]:
        """The chunks one after the other (nothing to overlap on the host)."""
        for frames, padded, tag in chunks:
            yield self.run(frames, padded, opts, timer), tag
