"""Pipelined batches through a ``GpuPipeline`` (``Detector.predict_stream`` on a CUDA backend).

For each chunk (frames, padded batch) of a sequence, in order:

    stage i+1 (background thread)   |  letterbox into staging buffer (i+1) % 2  (OpenCV, the pipeline's pool)
    main thread                     |  upload buffer i % 2, normalise, network (enqueued), post-process (waits)

The host pre-processing of chunk i+1 runs while the device works on chunk i (and while the caller consumes the
results of chunk i). Two staging buffers only: before chunk i+2 is written into the buffer of chunk i, the
stage waits for the CUDA event recorded after chunk i's upload, so memory stays bounded and a buffer is never
overwritten while it is being copied. With ``pre="gpu"`` (the whole frames uploaded, letterboxed on the device)
there is little host work to hide: the chunks simply run one after the other. A bad next batch (its error is
raised while pulling it, one ahead) is reported after the results of the current one are handed out.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

import numpy as np


def stream_chunks(
    pipe: Any, chunks: Iterator[tuple[list[np.ndarray], int, Any]], opts: Any, timer: Any
) -> Iterator[tuple[list[Any], Any]]:
    """Run ``chunks`` through ``pipe`` (a GpuPipeline), overlapping host and device work.

    Args:
        pipe: the GpuPipeline.
        chunks: ``(frames, padded, tag)``: frames (list of ndarray[H, W, 3] uint8 BGR), the batch the model is
            called with (>= len(frames)), and any value handed back with the results.
        opts: PredictOptions for every chunk.
        timer: stage timer (``mark("start")``, then "pre" after the upload and normalisation, "infer", "post").
    Yields:
        ``(list of Detections, tag)`` per chunk, in the order of ``chunks``.
    """
    if pipe.pre == "gpu":
        for frames, padded, tag in chunks:
            yield pipe.run(frames, padded, opts, timer), tag
        return
    torch = pipe._torch
    if pipe._stager is None:
        pipe._stager = ThreadPoolExecutor(1, thread_name_prefix="y9-stage")
    stager = pipe._stager
    uploaded: list[Any] = [None, None]  # per staging buffer: the event after its last upload
    pending: Future | None = None
    slot = 0
    try:
        item = next(chunks, None)
        if item is not None:
            pending = stager.submit(pipe._stage, item[0], item[1], slot, None)
        while pending is not None:
            staging, infos = pending.result()
            pending = None
            _, padded, tag = item
            ctx = torch.cuda.stream(pipe.stream) if pipe.cuda else _Null()
            with ctx:
                timer.mark("start")
                outputs, uploaded[slot] = pipe._launch(staging, padded, opts, timer)
            failed = None
            try:  # the caller's iterator (may read and check frames) while the device works
                item = next(chunks, None)
            except Exception as exc:  # noqa: BLE001 - raised after this chunk's results are handed out
                item, failed = None, exc
            if item is not None:
                pending = stager.submit(pipe._stage, item[0], item[1], 1 - slot, uploaded[1 - slot])
            with ctx:
                dets = pipe._finish(outputs, infos, opts, timer)
            yield dets, tag
            if failed is not None:
                raise failed
            slot = 1 - slot
    finally:
        if pending is not None:  # closed early or failed: let the stage finish before its buffer is reused
            wait_futures([pending])


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
