"""``TimedDetector``: a Detector whose calls are timed per stage, so that each ``Result`` carries ``speed``
(milliseconds per frame for ``preprocess``, ``inference`` and ``postprocess``, as YOLO tools report them)."""

from __future__ import annotations

from typing import Any


class TimedDetector:
    """Wraps a ``y9deploy.Detector``: ``predict`` passes a ``StageTimer`` and keeps the last call's stage times per
    frame in ``speed``; everything else is the Detector's."""

    def __init__(self, detector: Any, **overrides: Any) -> None:
        self._detector = detector
        self._overrides = overrides  # options of every call (agnostic NMS)
        self.speed: dict[str, float] = {}

    def predict(self, source: Any, **options: Any) -> Any:
        from y9deploy.stage_timer import StageTimer

        timer = StageTimer()
        out = self._detector.predict(source, timer=timer, **{**self._overrides, **options})
        n = len(out) if isinstance(out, list) else 1
        ms = timer.stages_ms()
        self.speed = {"preprocess": ms["pre"] / max(n, 1), "inference": ms["infer"] / max(n, 1),
                      "postprocess": ms["post"] / max(n, 1)}  # fmt: skip
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._detector, name)
