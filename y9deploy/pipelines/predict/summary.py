"""``PredictSummary``: what one ``predict_source`` run did (counts, the files written, what was skipped), and the
exit code ``y9 predict`` returns from it; filled by ``run.predict_source`` and its ``session.PredictSession``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_SKIPPED, EXIT_INTERRUPTED = 0, 1, 130


@dataclass
class PredictSummary:
    """What ``predict_source`` did. ``exit_code``: 0 every input was processed, 1 some were skipped
    (``skipped`` says which and why), 130 the run was stopped (Ctrl-C) before the end."""

    images: int = 0
    videos: int = 0
    frames: int = 0
    detections: int = 0
    seconds: float = 0.0
    save_dir: Path | None = None
    outputs: list[Path] = field(default_factory=list)  # annotated images and videos
    jsonl_path: Path | None = None
    json_path: Path | None = None
    csv_path: Path | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False
    dropped: int = 0  # frames dropped by the ``latest`` policy
    reconnects: int = 0
    counts: dict[str, Any] = field(default_factory=dict)  # source -> counting.CountSummary (with ``track``)
    files: list[Path] = field(default_factory=list)  # labels/, crops/, predictions_coco.json (``SaveOptions``)

    @property
    def exit_code(self) -> int:
        return EXIT_INTERRUPTED if self.interrupted else EXIT_SKIPPED if self.skipped else EXIT_OK
