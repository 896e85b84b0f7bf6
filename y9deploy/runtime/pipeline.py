"""The protocol the Detector's pipelines implement (``HostPipeline``, ``GpuPipeline``), and the stage timer.

A pipeline runs a batch (``run``) or a stream of batches (``run_stream``) of checked frames through its
backend and returns Detections; ``kind``, ``pre`` and ``post`` name it and the implementations it uses
(``runtime.frame_pipeline.choose_pipeline``, ``y9core.post.choice.choose_post``). A stage timer is any object with ``mark(stage)``: the pipeline calls ``mark("start")``, then
``mark("pre")``, ``mark("infer")`` and ``mark("post")`` at each stage's end (``y9deploy.measure.stage_timer.StageTimer``
records them; ``NULL_TIMER`` does nothing). ``batch_chunks``: a batch split into the runs a backend accepts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

PRE, INFER, POST = "pre", "infer", "post"

#: ``(frames, padded, tag)``: frames (list of ndarray[H, W, 3] uint8 BGR), the batch the model is called with
#: (>= len(frames)) and any value handed back with the chunk's results.
Chunk = tuple[list[np.ndarray], int, Any]


class NullTimer:
    """The stage timer used outside benchmarks: does nothing."""

    def mark(self, stage: str) -> None:
        pass


NULL_TIMER = NullTimer()


@runtime_checkable
class Pipeline(Protocol):
    """Frames -> Detections through one backend.

    Attributes:
        kind: the pipeline ("host", "torch": ``runtime.frame_pipeline.PipelineImpl``).
        pre: the pre-processing implementation (``pre.impl.PreImpl``).
        post: the post-processing implementation in use (``y9core.post.choice.PostImpl``; a kernel that fails
            while running is skipped from then on).
        cuda: the stages run on a CUDA device (timers then record CUDA events).
    """

    kind: str
    pre: Any
    post: Any
    cuda: bool

    def run(self, frames: list[np.ndarray], padded: int, opts: Any, timer: Any = NULL_TIMER) -> list[Any]:
        """One chunk: frames -> one Detections per frame (``padded``: the batch the model is called with)."""
        ...

    def run_stream(
        self, chunks: Iterator[Chunk], opts: Any, timer: Any = NULL_TIMER
    ) -> Iterator[tuple[list[Any], Any]]:
        """Chunks -> ``(Detections per frame, tag)`` per chunk, in order."""
        ...

    def close(self) -> None:
        """Free buffers and threads; idempotent."""
        ...


def batch_chunks(n: int, batch_range: tuple[int, int]) -> list[tuple[int, int, int]]:
    """Split ``n`` frames into runs the model accepts.

    Returns:
        ``[(start, stop, padded_batch), ...]``: frames ``start:stop`` go through one call of batch
        ``padded_batch`` (>= stop - start: static-batch models are padded up to their minimum).
    """
    lo, hi = batch_range
    if n <= 0:
        return []
    out = []
    for start in range(0, n, hi):
        stop = min(start + hi, n)
        out.append((start, stop, max(stop - start, lo)))
    return out
