"""Results that survive a kill: JSON lines and CSV rows appended and flushed per frame.

    with ResultsWriter("out") as w:               # out/predictions.jsonl, out/predictions.csv
        w.write("cam.mp4", 12, dets, timing={"infer": 4.1})
    build_final_json("out/predictions.jsonl", "out/predictions.json", model="m.onnx", names=[...])

One JSON line per frame: ``{"source", "frame" (null for an image), "captured" (unix time, live sources),
"timing_ms": {...}, "detections": [{"xyxy", "confidence", "class_id", "class_name"}]}``; with tracking each detection
also has ``"track_id"`` (null: not in a confirmed track), the CSV a ``track_id`` column, and a frame with counting
rules a ``"counts"`` object (``counting.FrameCounts``). Each line is written (``y9core.files.append_file``: one write call)
before the next frame is read, so a Ctrl-C, a crash or a kill leaves every finished frame on disk (a kill in the
middle of a write leaves at most a partial last line, which ``read_jsonl`` ignores), and a write that fails (a full
disk, a file-size limit) is cut back to the last whole line and raises an ``OSError`` naming the file. A frame's CSV
rows are one write too. ``stream`` writes the same lines to a text stream (stdout).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import IO, Any

from y9core.files.append_file import AppendFile
from y9core.files.atomic_write import atomic_write

CSV_HEADER = ["source", "frame", "class_id", "class_name", "confidence", "x1", "y1", "x2", "y2"]
JSONL_NAME, CSV_NAME, JSON_NAME = "predictions.jsonl", "predictions.csv", "predictions.json"


def frame_record(
    source: str, frame: int | None, dets: Any, *, timing: dict[str, float] | None = None,
    captured: float | None = None, track_id: Any = None, counts: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """The JSON-able record of one frame's detections (``track_id``: ndarray[N] of the tracks, -1 for none)."""
    rec: dict[str, Any] = {"source": source, "frame": frame}
    if captured is not None:
        rec["captured"] = round(captured, 6)
    if timing:
        rec["timing_ms"] = {k: round(v, 3) for k, v in timing.items()}
    rec["detections"] = dets.to_dict()["detections"]
    if track_id is not None:
        for d, tid in zip(rec["detections"], [int(v) for v in track_id]):
            d["track_id"] = tid if tid >= 0 else None
    if counts is not None:
        rec["counts"] = counts.to_dict()
    return rec


class ResultsWriter:
    """Append-and-flush writer of ``predictions.jsonl`` and ``predictions.csv`` in ``save_dir`` (either may be
    off), and/or JSON lines to ``stream``. A new writer starts new files (a previous run's are replaced), or with
    ``append`` adds to them (the CSV header is written only into a new or empty file). ``tracking``: the CSV gets a
    ``track_id`` column (empty where a detection has no track)."""

    def __init__(
        self,
        save_dir: str | Path | None,
        *,
        jsonl: bool = True,
        csv_rows: bool = True,
        stream: IO[str] | None = None,
        tracking: bool = False,
        append: bool = False,
    ) -> None:
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.stream = stream
        self.tracking = tracking
        self.frames = 0
        self.jsonl_path = self.save_dir / JSONL_NAME if self.save_dir is not None and jsonl else None
        self.csv_path = self.save_dir / CSV_NAME if self.save_dir is not None and csv_rows else None
        self._jsonl = AppendFile(self.jsonl_path, fresh=not append) if self.jsonl_path else None
        self._csv = AppendFile(self.csv_path, fresh=not append) if self.csv_path else None
        if self._csv is not None and (not append or self.csv_path.stat().st_size == 0):  # type: ignore[union-attr]
            self._csv.append(_csv_text([CSV_HEADER + (["track_id"] if tracking else [])]))

    def write_record(self, rec: dict[str, Any]) -> None:
        """Append one frame record (``frame_record``): its JSON line and its CSV rows, each in one write.

        Raises:
            OSError naming the file that could not be written (the file keeps its whole lines only).
        """
        line = json.dumps(rec) + "\n"
        if self._jsonl is not None:
            self._jsonl.append(line)
        if self.stream is not None:
            self.stream.write(line)
            self.stream.flush()
        if self._csv is not None and rec["detections"]:
            frame = "" if rec["frame"] is None else rec["frame"]
            self._csv.append(_csv_text(
                [rec["source"], frame, d["class_id"], d["class_name"], f"{d['confidence']:.5f}",
                 *(f"{v:.2f}" for v in d["xyxy"]),
                 *([d.get("track_id") if d.get("track_id") is not None else ""] if self.tracking else [])]
                for d in rec["detections"]
            ))  # fmt: skip
        self.frames += 1

    def write(self, source: str, frame: int | None, dets: Any, **kw: Any) -> dict[str, Any]:
        rec = frame_record(source, frame, dets, **kw)
        self.write_record(rec)
        return rec

    def close(self) -> None:
        for fh in (self._jsonl, self._csv):
            if fh is not None:
                fh.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file; a partial last line (a kill mid-write) is ignored."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def build_final_json(
    jsonl_path: str | Path, json_path: str | Path, *, model: str, names: list[str],
    skipped: list[tuple[str, str]] = (),  # type: ignore[assignment]
    counts: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    """One JSON document ``{"model", "names", "results": [...], "skipped": [{"source", "reason"}]}`` from the
    JSON lines (and ``"counts"``: source -> ``CountSummary.to_dict()``, when counting); written atomically
    (``y9core.files.atomic_write``: an OSError names ``json_path``)."""
    payload = {"model": model, "names": names, "results": read_jsonl(jsonl_path),
               "skipped": [{"source": s, "reason": r} for s, r in skipped]}  # fmt: skip
    if counts:
        payload["counts"] = counts
    return atomic_write(json_path, json.dumps(payload) + "\n")


def _csv_text(rows) -> str:
    """CSV rows as the text ``csv.writer`` writes for them."""
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(rows)
    return buf.getvalue()
