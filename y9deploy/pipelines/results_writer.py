"""Results that survive a kill: JSON lines and CSV rows appended and flushed per frame.

    with ResultsWriter("out") as w:               # out/predictions.jsonl, out/predictions.csv
        w.write("cam.mp4", 12, dets, timing={"infer": 4.1})
    build_final_json("out/predictions.jsonl", "out/predictions.json", model="m.onnx", names=[...])

One JSON line per frame: ``{"source", "frame" (null for an image), "captured" (unix time, live sources),
"timing_ms": {...}, "detections": [{"xyxy", "confidence", "class_id", "class_name"}]}``; with tracking each detection
also has ``"track_id"`` (null: not in a confirmed track), the CSV a ``track_id`` column, and a frame with counting
rules a ``"counts"`` object (``counting.FrameCounts``). Each line is written and
flushed before the next frame is read, so a Ctrl-C, a crash or a kill leaves every finished frame on disk (at most
a partial last line, which ``read_jsonl`` ignores). ``stream`` writes the same lines to a text stream (stdout).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import IO, Any

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
        mode = "a" if append else "w"
        self._jsonl = self.jsonl_path.open(mode, encoding="utf-8") if self.jsonl_path else None
        self._csv_fh = self.csv_path.open(mode, newline="", encoding="utf-8") if self.csv_path else None
        self._csv = csv.writer(self._csv_fh) if self._csv_fh else None
        if self._csv is not None and self._csv_fh.tell() == 0:  # type: ignore[union-attr]
            self._csv.writerow(CSV_HEADER + (["track_id"] if tracking else []))
            self._csv_fh.flush()  # type: ignore[union-attr]

    def write_record(self, rec: dict[str, Any]) -> None:
        """Append one frame record (``frame_record``) and flush."""
        line = json.dumps(rec) + "\n"
        for fh in (self._jsonl, self.stream):
            if fh is not None:
                fh.write(line)
                fh.flush()
        if self._csv is not None:
            frame = "" if rec["frame"] is None else rec["frame"]
            for d in rec["detections"]:
                self._csv.writerow([rec["source"], frame, d["class_id"], d["class_name"], f"{d['confidence']:.5f}",
                                    *(f"{v:.2f}" for v in d["xyxy"]),
                                    *([d.get("track_id") if d.get("track_id") is not None else ""]
                                      if self.tracking else [])])  # fmt: skip
            self._csv_fh.flush()  # type: ignore[union-attr]
        self.frames += 1

    def write(self, source: str, frame: int | None, dets: Any, **kw: Any) -> dict[str, Any]:
        rec = frame_record(source, frame, dets, **kw)
        self.write_record(rec)
        return rec

    def close(self) -> None:
        for fh in (self._jsonl, self._csv_fh):
            if fh is not None and not fh.closed:
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
    JSON lines (and ``"counts"``: source -> ``CountSummary.to_dict()``, when counting); written to a temporary
    file and renamed."""
    payload = {"model": model, "names": names, "results": read_jsonl(jsonl_path),
               "skipped": [{"source": s, "reason": r} for s, r in skipped]}  # fmt: skip
    if counts:
        payload["counts"] = counts
    out = Path(json_path)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(payload) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out
