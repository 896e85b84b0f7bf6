"""Run a Detector over images, folders and videos; write annotated copies and JSON/CSV of the detections.

``predict_source("photos/", "gs.onnx", save_dir="out")`` writes ``out/<image>.jpg`` (annotated),
``out/<video>.mp4`` (annotated), ``out/predictions.json`` and ``out/predictions.csv`` and returns a
``PredictSummary``. The ``y9 predict`` command is a thin wrapper around it.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2

from y9deploy.pipelines.video import VIDEO_SUFFIXES, VideoReader, is_stream_url

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
CSV_HEADER = ["source", "frame", "class_id", "class_name", "confidence", "x1", "y1", "x2", "y2"]


@dataclass
class PredictSummary:
    """What ``predict_source`` did."""

    images: int = 0
    videos: int = 0
    frames: int = 0
    detections: int = 0
    seconds: float = 0.0
    save_dir: Path | None = None
    outputs: list[Path] = field(default_factory=list)  # annotated images and videos
    json_path: Path | None = None
    csv_path: Path | None = None


def collect_sources(source: str | Path) -> tuple[list[Path], list[str | Path]]:
    """A file, a folder (searched recursively, sorted) or a stream URL / camera index -> (images, videos).

    Raises:
        FileNotFoundError: the path does not exist. ValueError: a file of another type, or a folder with no
        image or video in it.
    """
    text = str(source)
    if is_stream_url(text) or text.isdigit():
        return [], [text]
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(
            f"source {path} does not exist; expected an image, a video, a folder or a stream URL."
        )
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    images = [p for p in files if p.suffix.lower() in IMAGE_SUFFIXES]
    videos: list[str | Path] = [p for p in files if p.suffix.lower() in VIDEO_SUFFIXES]
    if not images and not videos:
        what = f"folder {path} holds no" if path.is_dir() else f"{path} is not an"
        raise ValueError(
            f"{what} image ({', '.join(IMAGE_SUFFIXES)}) or video ({', '.join(VIDEO_SUFFIXES)}) file."
        )
    return images, videos


def _unique(save_dir: Path, name: str, used: set[str]) -> Path:
    stem, suffix = Path(name).stem, Path(name).suffix
    candidate, k = name, 1
    while candidate in used:
        candidate = f"{stem}_{k}{suffix}"
        k += 1
    used.add(candidate)
    return save_dir / candidate


def predict_source(
    source: str | Path,
    model: str | Path | Any,
    *,
    save_dir: str | Path | None = None,
    conf: float = 0.25,
    iou: float = 0.45,
    max_det: int = 300,
    classes: list[int] | None = None,
    device: str | int | None = None,
    imgsz: int | None = None,
    vid_stride: int = 1,
    save_images: bool = True,
    on_start: Callable[[int | None], None] | None = None,
    on_frame: Callable[[str, int], None] | None = None,
) -> PredictSummary:
    """Detect objects in every image and video frame of ``source``.

    Args:
        source: an image, a video, a folder (recursive), a camera index or a stream URL.
        model: a model file for a new ``Detector``, or a ``Detector`` to use.
        save_dir: where annotated outputs, ``predictions.json`` and ``predictions.csv`` go (None: nothing saved).
        conf, iou, max_det, classes, device, imgsz: as ``Detector``.
        vid_stride: process every n-th video frame.
        save_images: write annotated images / videos (JSON and CSV are written whenever save_dir is set).
        on_start: called once with the expected number of frames (None when unknown: live streams).
        on_frame: called after each image or frame with (source name, detections in it).
    """
    from y9deploy.draw import draw_detections
    from y9deploy.runtime.detector import Detector, read_image

    images, videos = collect_sources(source)
    out_dir = Path(save_dir) if save_dir is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    counts = []
    for v in videos:  # opened once up front: a bad video fails before any work is done
        with VideoReader(v, stride=vid_stride) as probe:
            counts.append(probe.expected_frames)
    total = None if any(c is None for c in counts) else len(images) + sum(counts)  # type: ignore[arg-type]
    if on_start is not None:
        on_start(total)
    own = not hasattr(model, "predict")
    det = (
        Detector(model, device=device, conf=conf, iou=iou, max_det=max_det, classes=classes, imgsz=imgsz)
        if own
        else model
    )
    summary = PredictSummary(save_dir=out_dir)
    records: list[dict[str, Any]] = []
    used: set[str] = set()
    t0 = time.perf_counter()

    def record(name: str, frame_index: int | None, dets: Any) -> None:
        records.append({"source": name, "frame": frame_index, **dets.to_dict()})
        summary.frames += 1
        summary.detections += len(dets)
        if on_frame is not None:
            on_frame(name, len(dets))

    try:
        for path in images:
            frame = read_image(path)
            dets = det.predict(frame)
            record(str(path), None, dets)
            summary.images += 1
            if out_dir is not None and save_images:
                out = _unique(out_dir, path.name, used)
                cv2.imwrite(str(out), draw_detections(frame, dets))
                summary.outputs.append(out)
        for video in videos:
            reader = VideoReader(video, stride=vid_stride)
            writer = None
            out = None
            if out_dir is not None and save_images:
                base = Path(str(video)).stem if not is_stream_url(str(video)) else "stream"
                out = _unique(out_dir, f"{base}.mp4", used)
            try:
                for index, frame in reader:
                    dets = det.predict(frame)
                    record(str(video), index, dets)
                    if out is not None:
                        if writer is None:
                            fps = reader.fps / reader.stride
                            writer = cv2.VideoWriter(
                                str(out),
                                cv2.VideoWriter_fourcc(*"mp4v"),
                                fps,
                                (frame.shape[1], frame.shape[0]),
                            )
                        writer.write(draw_detections(frame, dets))
            finally:
                reader.close()
                if writer is not None:
                    writer.release()
                    summary.outputs.append(out)  # type: ignore[arg-type]
            summary.videos += 1
    finally:
        if own:
            det.close()
    summary.seconds = time.perf_counter() - t0
    if out_dir is not None:
        summary.json_path = out_dir / "predictions.json"
        names = records[0]["names"] if records else []
        payload = {
            "model": str(getattr(det, "path", model)),
            "names": names,
            "results": [{k: v for k, v in r.items() if k != "names"} for r in records],
        }
        summary.json_path.write_text(json.dumps(payload) + "\n", encoding="utf-8")
        summary.csv_path = out_dir / "predictions.csv"
        with summary.csv_path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(CSV_HEADER)
            for r in records:
                for d in r["detections"]:
                    w.writerow(
                        [
                            r["source"],
                            "" if r["frame"] is None else r["frame"],
                            d["class_id"],
                            d["class_name"],
                            f"{d['confidence']:.5f}",
                            *(f"{v:.2f}" for v in d["xyxy"]),
                        ]
                    )
    return summary
