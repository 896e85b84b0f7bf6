"""``StreamRunner``: pipelined batches through a ``GpuPipeline`` (``Detector.predict_stream`` on a CUDA backend).

For chunk i of a sequence (frames, padded batch), with "hybrid" or "cpu" pre-processing:

    stage thread  | letterbox chunk i into host staging slot i % 2; upload it on a copy stream into device
                  | slot i % 2 (so the transfer overlaps the network of chunk i-1)
    main thread   | launch i: wait for its upload, normalise, network (enqueued)
                  | post-process i-1 ... see below

The main thread keeps the device one chunk ahead of the results: after chunk i's network and post-processing
are enqueued (``post.graph`` enqueues without waiting once the shape has run), it launches chunk i+1
(staged meanwhile) and its post-processing, pulls chunk i+2 and starts staging it into the slots of chunk i
(so the host letterbox, the slowest host step at large batches, runs back to back), and only then waits for
chunk i's detections, builds its Detections on the host and hands them out: the device always has the next
chunk queued while the host works.

The runner owns its staging slots (``slots``: two host and two device buffers) and its stager thread.
Memory stays bounded: two host and two device staging slots. A host slot is rewritten only after the CUDA
event of its last upload completed; a device slot only after the event recorded when the network that read it
was enqueued. Batches are pulled at most two ahead of the results (at the yield of chunk i: chunks 0..i+2).
A bad next batch (its error is raised while pulling it) is reported after the results of every batch before
it. With ``pre="gpu"`` (the whole frames uploaded, letterboxed on the device) the chunks simply run one after
the other.

Stage marks (``timer``): "start", "pre" (upload waited for, normalised), "infer" (network enqueued), then "post"
once the post-processing and its download are enqueued (so with CUDA events: the device time of each stage;
the host's building of Detections overlaps the next chunk and shows in the interval between results only).
With the eager post-processing implementations, ``PostRunner.submit`` computes the rows at once (waiting
for the device).
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Any

import numpy as np

from y9deploy.pre.impl import PreImpl
from y9deploy.runtime.pipeline import INFER, POST, PRE, Chunk


@dataclass
class Launched:
    """A chunk whose network is enqueued."""

    outputs: dict[str, Any]
    infos: list[Any]
    tag: Any
    slot: int


class StreamSlots:
    """The two staging slots of a stream: host buffers (``host_buffers``), device buffers, and the CUDA events
    guarding their reuse (see the module docstring)."""

    def __init__(self, torch: Any, device: Any, cuda: bool) -> None:
        self.torch, self.device, self.cuda = torch, device, cuda
        self.host_buffers: list[Any] = [None, None]
        self.device_buffers: list[Any] = [None, None]
        self.uploaded: list[Any] = [None, None]  # copy stream: after the slot's upload
        self.consumed: list[Any] = [None, None]  # compute stream: after the network that read the slot
        self.copy_stream = torch.cuda.Stream(device) if cuda else None

    def host(self, slot: int, shape: tuple[int, ...], dtype: Any) -> Any:
        """Host slot ``slot`` viewed as ``shape`` (pinned on CUDA; grown, never shrunk)."""
        numel = int(np.prod(shape))
        buf = self.host_buffers[slot]
        if buf is None or buf.dtype != dtype or buf.numel() < numel:
            buf = self.host_buffers[slot] = self.torch.empty(numel, dtype=dtype, pin_memory=self.cuda)
        return buf[:numel].view(shape)

    def upload(self, slot: int, staging: Any) -> Any:
        """Copy ``staging`` into device slot ``slot`` on the copy stream (after the network that last read
        that slot); returns the device view. On the CPU the staging buffer itself."""
        torch = self.torch
        if not self.cuda:
            return staging
        numel = staging.numel()
        dev = self.device_buffers[slot]
        if dev is None or dev.dtype != staging.dtype or dev.numel() < numel:
            if self.consumed[slot] is not None:
                self.consumed[slot].synchronize()  # the old buffer may still be read: free it only after
            dev = self.device_buffers[slot] = torch.empty(numel, dtype=staging.dtype, device=self.device)
        view = dev[:numel].view(staging.shape)
        with torch.cuda.stream(self.copy_stream):
            if self.consumed[slot] is not None:
                self.copy_stream.wait_event(self.consumed[slot])
            view.copy_(staging, non_blocking=True)
            event = self.uploaded[slot] = torch.cuda.Event()
            event.record(self.copy_stream)
        return view


class HostProfile:
    """Host milliseconds spent per step of the stream (``StreamRunner.profile``; benchmarks read it): where the
    host waits and works, to tell a host-bound stream from a device-bound one."""

    def __init__(self) -> None:
        self.ms: defaultdict[str, float] = defaultdict(float)
        self.calls: defaultdict[str, int] = defaultdict(int)

    def add(self, name: str, t0: float) -> float:
        now = time.perf_counter()
        self.ms[name] += (now - t0) * 1000.0
        self.calls[name] += 1
        return now

    def per_call(self) -> dict[str, float]:
        return {k: round(v / max(1, self.calls[k]), 3) for k, v in self.ms.items()}

    def reset(self) -> None:
        self.ms.clear()
        self.calls.clear()


class StreamRunner:
    """Runs chunks through a ``GpuPipeline``, overlapping host and device work (see the module docstring).

    Args:
        pipe: the GpuPipeline (its ``pre_stage``, ``backend``, ``post_runner``, ``stream``).
    """

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self.slots: StreamSlots | None = None  # made by the first stream, kept for the next ones
        self.stager: ThreadPoolExecutor | None = None  # stages the next chunk in the background
        self.profile = HostProfile()  # host time per step

    def close(self) -> None:
        if self.stager is not None:
            self.stager.shutdown(wait=True)
            self.stager = None
        self.slots = None

    def stage(self, frames: list[np.ndarray], padded: int, slot: int) -> tuple[Any, list[Any]]:
        """Stage thread: the host part of pre-processing into host slot ``slot`` and its upload: (device view
        of the slot, LetterboxInfo list)."""
        pipe, prof, slots = self.pipe, self.profile, self.slots
        t = time.perf_counter()
        if slots.uploaded[slot] is not None:
            slots.uploaded[slot].synchronize()  # the host slot's last upload must be done before rewriting it
        t = prof.add("stage_wait_slot", t)
        h, w = pipe.imgsz
        if pipe.pre is PreImpl.HYBRID:
            staging = slots.host(slot, (len(frames), h, w, 3), pipe.torch.uint8)
            infos = pipe.pre_stage.letterbox_u8(frames, staging.numpy())
        else:
            staging = slots.host(slot, (padded, 3, h, w), pipe.dtype)
            infos = pipe.pre_stage.prepare_into(frames, staging.numpy())
        t = prof.add("stage_letterbox", t)
        view = slots.upload(slot, staging)
        prof.add("stage_upload_enqueue", t)
        return view, infos

    def launch(self, staged: Any, padded: int, slot: int, opts: Any, timer: Any) -> dict[str, Any]:
        """Finish pre-processing of a staged chunk and enqueue its network (on the pipeline's stream)."""
        pipe, torch = self.pipe, self.pipe.torch
        timer.mark("start")
        if pipe.cuda:
            pipe.stream.wait_event(self.slots.uploaded[slot])
        if pipe.pre is PreImpl.HYBRID:
            blob = pipe.pre_stage.to_blob(staged, upload=False)
            if blob.shape[0] < padded:
                blob = torch.cat([blob, blob.new_zeros((padded - blob.shape[0], *blob.shape[1:]))])
        else:
            blob = staged
        timer.mark(PRE)
        outputs = pipe.backend.infer(blob, opts.extras(pipe.backend.extras))
        if pipe.cuda:
            event = self.slots.consumed[slot] = torch.cuda.Event()
            event.record(pipe.stream)
        timer.mark(INFER)
        return outputs

    def run(self, chunks: Iterator[Chunk], opts: Any, timer: Any) -> Iterator[tuple[list[Any], Any]]:
        """Run ``chunks`` (``(frames, padded, tag)``) with ``opts`` (PredictOptions) for every chunk.

        Yields:
            ``(list of Detections, tag)`` per chunk, in the order of ``chunks``.
        """
        pipe = self.pipe
        if pipe.pre is PreImpl.GPU:
            for frames, padded, tag in chunks:
                yield pipe.run(frames, padded, opts, timer), tag
            return
        if self.stager is None:
            self.stager = ThreadPoolExecutor(1, thread_name_prefix="y9-stage")
        if self.slots is None:
            self.slots = StreamSlots(pipe.torch, pipe.device, pipe.cuda)
        stager, prof, post_runner = self.stager, self.profile, pipe.post_runner
        failed: list[BaseException] = []

        def pull() -> Any:
            if failed:
                return None
            try:
                return next(chunks, None)
            except Exception as exc:  # noqa: BLE001 - raised after the results before it are handed out
                failed.append(exc)
                return None

        pending: Future | None = None
        pending_item: Any = None
        ctx = pipe.on_stream if pipe.cuda else contextlib.nullcontext

        def start(item: Any, slot: int) -> Future:
            return stager.submit(self.stage, item[0], item[1], slot)

        def take(slot: int) -> Launched:
            """Launch the staged chunk (in ``slot``), then pull the next one and start staging it into the
            other slot at once, so that the host letterbox runs back to back."""
            nonlocal pending, pending_item
            t = time.perf_counter()
            staged, infos = pending.result()
            t = prof.add("main_wait_stage", t)
            item, pending, pending_item = pending_item, None, None
            with ctx():
                outputs = self.launch(staged, item[1], slot, opts, timer)
            t = prof.add("main_launch", t)
            pending_item = pull()
            t = prof.add("main_pull", t)
            if pending_item is not None:
                pending = start(pending_item, 1 - slot)
            return Launched(outputs, infos, item[2], slot)

        try:
            pending_item = pull()
            if pending_item is None:
                if failed:
                    raise failed[0]
                return
            pending = start(pending_item, 0)
            cur: Launched | None = take(0)
            with ctx():
                post = post_runner.submit(cur.outputs, len(cur.infos), opts)
                timer.mark(POST)
            while cur is not None:
                with ctx():
                    nxt, nxt_post = (take(1 - cur.slot), None) if pending is not None else (None, None)
                    t = time.perf_counter()
                    if nxt is not None:
                        nxt_post = post_runner.submit(nxt.outputs, len(nxt.infos), opts)
                        timer.mark(POST)
                    t = prof.add("main_post_submit", t)
                    if post.ready is None:
                        post.block()  # waits for the download (the Detections below read it again, ready)
                    t = prof.add("main_wait_rows", t)
                    dets = post_runner.detections(post, cur.infos)
                    t = prof.add("main_detections", t)
                yield dets, cur.tag
                prof.add("caller", t)
                cur, post = nxt, nxt_post
            if failed:
                raise failed[0]
        finally:
            if (
                pending is not None
            ):  # closed early or failed: let the stage finish before its buffer is reused
                wait_futures([pending])
