"""Run inspection rules over images (one image = one item) with an audit log written as it goes.

    summary = run_inspection("parts/", "model.onnx", "rules.yaml", audit_dir="runs/inspect")
    summary.failed, summary.audit_csv, summary.audit_jsonl

The audit log is two files in ``audit_dir``, appended to (never overwritten) and flushed after every item, so
that a run stopped at any point keeps the verdicts of the items done:
- ``audit.csv``: one row per item: time, run, item, verdict, reasons, counts (JSON), detections;
- ``audit.jsonl``: one JSON object per item: the same, plus the counted detections and the rules/model files.
An item that cannot be read gets the verdict ``error`` (with the reason) and the run goes on.

A video file, stream or camera is a counting gate (``gate``, ``gate_run``): one item per time
window of the rules file's ``window_s``, written as soon as the window ends; at the end one JSON line with the run's
summary (``InspectionSummary.to_dict()``: windows, line totals, zone visits) is appended to ``summary.jsonl``.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from y9core.files.append_file import AppendFile
from y9deploy.pipelines.inspection.frame_rules import inspect
from y9deploy.pipelines.inspection.gate_run import is_video_source, run_gate
from y9deploy.pipelines.inspection.rules_file import load_rules
from y9deploy.pipelines.inspection.ruleset import RuleSet
from y9deploy.pipelines.sources.frame_reader import ReconnectPolicy

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
CSV_FIELDS = ("time", "run", "item", "verdict", "reasons", "counts", "detections")
PASS, FAIL, ERROR = "pass", "fail", "error"
SUMMARY_NAME = "summary.jsonl"  # one line per video run: InspectionSummary.to_dict()


@dataclass
class ItemVerdict:
    """The verdict on one item: ``pass``, ``fail`` (a rule did not hold) or ``error`` (unreadable)."""

    item: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    detections: list[dict[str, Any]] = field(default_factory=list)  # those that met the thresholds
    seconds: float = 0.0


@dataclass
class InspectionSummary:
    run_id: str
    items: int
    passed: int
    failed: int
    errors: int
    audit_csv: Path
    audit_jsonl: Path
    seconds: float
    counts: dict[str, Any] = field(default_factory=dict)  # video source -> counting.CountSummary (the gate)
    frames: int = 0  # video frames judged
    dropped: int = 0  # video frames dropped by the ``latest`` policy

    @property
    def all_passed(self) -> bool:
        return self.failed == 0 and self.errors == 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["audit_csv"], d["audit_jsonl"] = str(self.audit_csv), str(self.audit_jsonl)
        return d


def list_items(source: str | Path) -> list[Path]:
    """An image file, or a folder of images (recursive, sorted) -> the items to inspect."""
    src = Path(source)
    if not src.exists():
        raise FileNotFoundError(f"source {src} does not exist; expected an image file or a folder of images.")
    if src.is_file():
        if src.suffix.lower() not in IMAGE_SUFFIXES:
            raise ValueError(f"source {src} is not an image ({', '.join(IMAGE_SUFFIXES)}).")
        return [src]
    items = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not items:
        raise ValueError(f"folder {src} holds no images ({', '.join(IMAGE_SUFFIXES)}); nothing to inspect.")
    return items


def _csv_line(row) -> str:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerow(row)
    return buf.getvalue()


class AuditLog:
    """``audit.csv`` and ``audit.jsonl`` in a folder, appended to and flushed after every item."""

    def __init__(self, folder: str | Path, run_id: str, extra: dict[str, str] | None = None) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(f"audit folder {self.folder} is a file; expected a folder.")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.csv_path = self.folder / "audit.csv"
        self.jsonl_path = self.folder / "audit.jsonl"
        self.run_id = run_id
        self.extra = dict(extra or {})
        new_csv = not self.csv_path.exists() or self.csv_path.stat().st_size == 0
        self._csv = AppendFile(self.csv_path, durable=True)
        self._jsonl = AppendFile(self.jsonl_path, durable=True)
        if new_csv:
            self._csv.append(_csv_line(CSV_FIELDS))

    def write(self, v: ItemVerdict) -> None:
        """Append the item's CSV row and JSON line, each whole in one write and fsynced (``y9core.files.append_file``:
        a failed write is cut back and raises an OSError naming the file)."""
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        row = [
            now,
            self.run_id,
            v.item,
            v.verdict,
            " | ".join(v.reasons),
            json.dumps(v.counts),
            len(v.detections),
        ]
        self._csv.append(_csv_line(row))
        record = {"time": now, "run": self.run_id, **asdict(v), **self.extra}
        self._jsonl.append(json.dumps(record) + "\n")

    def close(self) -> None:
        self._csv.close()
        self._jsonl.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_inspection(
    source: str | Path,
    model: str | Path,
    rules: str | Path,
    *,
    audit_dir: str | Path = "runs/inspect",
    device: str | None = None,
    iou: float = 0.45,
    on_item: Callable[[Any], None] | None = None,
    tracker: str = "bytetrack",
    policy: str | None = None,
    reconnect: ReconnectPolicy | None = None,
    max_frames: int | None = None,
    stop: threading.Event | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> InspectionSummary:
    """Inspect every item of ``source`` with the rules file ``rules`` and the detector ``model``.

    ``source``: an image, a folder of images (one item each), or a video file, stream URL or camera index (a
    counting gate: one item per window; ``tracker``, ``policy``, ``reconnect``, ``max_frames``, ``stop`` and
    ``on_warning`` as ``gate_run.run_gate``; ``on_item`` then gets ``WindowVerdict``s).
    The rules file is read and checked (against the model's class names too) before any item is inspected; the
    detector keeps every detection that the lowest per-class ``min_conf`` admits, and the thresholds of the
    file decide per class.
    Raises:
        FileNotFoundError, RulesFileError, ModelFileError, ValueError: bad rules, model or source.
    """
    from y9deploy.runtime.detector import Detector, read_image

    ruleset = load_rules(rules)
    video = is_video_source(source)
    if not video:
        _check_no_line_rules(ruleset, source)
    items = [] if video else list_items(source)
    audit_dir = Path(audit_dir)
    if audit_dir.resolve() in {p.resolve() for p in items}:
        raise ValueError(f"audit folder {audit_dir} is one of the input images; choose another --out.")
    run_id = uuid.uuid4().hex[:12]
    start = time.perf_counter()
    counts = {PASS: 0, FAIL: 0, ERROR: 0}
    # the Detector keeps scores > conf; the rules keep scores >= min_conf: one float step below keeps both equal
    conf = float(np.nextafter(np.float32(ruleset.lowest_conf), np.float32(0)))
    with Detector(model, device=device, conf=max(conf, 0.0), iou=iou) as det:
        bound, thresholds = ruleset.bind(det.names)
        extra = {"rules": str(rules), "model": str(model)}
        if video:
            return _run_gate(source, det, ruleset, lambda: AuditLog(audit_dir, run_id, extra), start, on_item,
                             dict(tracker=tracker, policy=policy, reconnect=reconnect, max_frames=max_frames,
                                  stop=stop, on_warning=on_warning))  # fmt: skip
        with AuditLog(audit_dir, run_id, extra) as log:
            for path in items:
                t0 = time.perf_counter()
                try:
                    frame = read_image(path)
                except (OSError, ValueError) as exc:
                    verdict = ItemVerdict(str(path), ERROR, [str(exc)])
                else:
                    result = inspect(det.predict(frame), bound, thresholds)
                    verdict = ItemVerdict(
                        str(path),
                        result.verdict,
                        list(result.reasons),
                        dict(result.counts),
                        result.kept.to_dict()["detections"],
                    )
                verdict.seconds = round(time.perf_counter() - t0, 6)
                log.write(verdict)
                counts[verdict.verdict] += 1
                if on_item is not None:
                    on_item(verdict)
    return InspectionSummary(
        run_id,
        len(items),
        counts[PASS],
        counts[FAIL],
        counts[ERROR],
        log.csv_path,
        log.jsonl_path,
        round(time.perf_counter() - start, 3),
    )


def _check_no_line_rules(ruleset: RuleSet, source: str | Path) -> None:
    """Line rules count crossings over time: refused, in one sentence, for images."""
    if ruleset.line_rules:
        spec = ruleset.line_rules[0]
        raise ValueError(f"{ruleset.path}:{spec.line}: rule {spec.name!r} counts crossings of the line "
                         f"{spec.count_line!r}, which needs a video file, a stream or a camera; {source} is not one.")  # fmt: skip


def _run_gate(
    source: str | Path, det: Any, ruleset: RuleSet, open_log: Callable[[], AuditLog], start: float,
    on_item: Callable[[Any], None] | None, options: dict[str, Any],
) -> InspectionSummary:  # fmt: skip
    """A video source through the counting gate: each window's verdict to the audit log as it is judged, then the
    summary line appended to ``summary.jsonl`` beside it. The log is opened with the first verdict: a source that
    cannot be opened leaves no file behind."""
    counts = {PASS: 0, FAIL: 0, ERROR: 0}
    opened: list[AuditLog] = []

    def emit(v: Any) -> None:
        if not opened:
            opened.append(open_log())
        opened[0].write(v)
        counts[v.verdict] += 1
        if on_item is not None:
            on_item(v)

    try:
        result = run_gate(source, det, ruleset, emit=emit, **options)
    finally:
        if opened:
            opened[0].close()
    log = opened[0] if opened else open_log()  # a source without frames: empty audit files beside the summary
    log.close()
    summary = InspectionSummary(log.run_id, sum(counts.values()), counts[PASS], counts[FAIL], counts[ERROR],
                                log.csv_path, log.jsonl_path, round(time.perf_counter() - start, 3),
                                {str(source): result.counts}, result.frames, result.dropped)  # fmt: skip
    record = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "source": str(source),
              **summary.to_dict(), **log.extra}  # fmt: skip
    with AppendFile(log.folder / SUMMARY_NAME, durable=True) as fh:  # one whole line, fsynced; an OSError names it
        fh.append(json.dumps(record) + "\n")
    return summary
