"""Stage timing of ``Detector`` calls for benchmarks: host clocks, or CUDA events on the current stream."""

from __future__ import annotations

import time
from typing import Any

STAGES = ("pre", "infer", "post", "e2e")


class StageTimer:
    """Collects the stage marks ``Detector`` makes (``mark("start")``, then ``mark("pre")`` ... at each stage
    end). With ``cuda=True`` each mark also records a CUDA event on the current stream.

    A call's stages end with its "post" mark. In a pipelined stream the next chunk's "start", "pre" and "infer"
    marks come before the caller reads the times of the current one: ``stages_ms`` counts the marks up to the
    last "post" only, and ``reset`` keeps the marks after it (the chunk already in flight)."""

    def __init__(self, cuda: bool = False) -> None:
        self.cuda = cuda
        self._marks: list[tuple[str, float, Any]] = []
        self._free: list[Any] = []  # recorded CUDA events no longer needed, reused by later marks
        if cuda:
            import torch

            self._torch = torch

    def _closed(self) -> int:
        """Number of marks up to and including the last "post" one."""
        for i in range(len(self._marks) - 1, -1, -1):
            if self._marks[i][0] == "post":
                return i + 1
        return 0

    def reset(self) -> None:
        done = self._closed()
        self._free += [e for _, _, e in self._marks[:done] if e is not None]
        del self._marks[:done]

    def mark(self, stage: str) -> None:
        event = None
        if self.cuda:
            event = self._free.pop() if self._free else self._torch.cuda.Event(enable_timing=True)
            event.record()
        self._marks.append((stage, time.perf_counter(), event))

    def stages_ms(self) -> dict[str, float]:
        """Milliseconds per stage (summed when a call ran several chunks) of the marks up to the last "post"
        (all marks when there is none)."""
        out = {s: 0.0 for s in STAGES[:3]}
        marks = self._marks[: self._closed() or len(self._marks)]
        if self.cuda and marks:
            marks[-1][2].synchronize()
        for (_, t0, e0), (stage, t1, e1) in zip(marks, marks[1:]):
            if stage == "start":
                continue
            out[stage] = out.get(stage, 0.0) + (e0.elapsed_time(e1) if self.cuda else (t1 - t0) * 1000.0)
        return out
