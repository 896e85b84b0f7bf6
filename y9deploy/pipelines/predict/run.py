"""Run a Detector over images, folders, videos, streams and cameras; results are never lost.

``predict_source("photos/", "gs.onnx", save_dir="out")`` writes, as it goes, ``out/predictions.jsonl`` (one JSON
line per frame, flushed) and ``out/predictions.csv`` (one row per detection, flushed), annotated copies
(``out/<image>.jpg``, ``out/<video>.mp4``), and at the end ``out/predictions.json`` built from the JSON lines. It
returns a ``PredictSummary``; ``y9 predict`` is a thin wrapper around it.

- An unreadable image or video is skipped with a warning (``on_warning``) and listed in ``summary.skipped``.
- A ``save_dir`` that is, or is inside, a source folder is refused (``check_save_dir``), and an output name
  never resolves to an input file.
- ``stop`` (a ``threading.Event``, set e.g. by a Ctrl-C handler) ends the run after the current frame;
  everything done so far is on disk and ``summary.interrupted`` is True.
- A write that fails (a full disk, a file-size limit) stops the run with an ``OSError`` naming the file: the JSON
  lines and CSV rows written until then are whole, and ``predictions.json`` is built from them when it can be.
- Videos, streams and cameras go through ``frame_reader.FrameReader`` (reader thread, ``latest``/``queue`` policy,
  reconnects); ``batch`` frames at a time go through the Detector; ``tile`` runs sliced inference per frame.
- ``track`` (``source_tracking.TrackOptions``): videos and streams are tracked (a ``track_id`` on every detection) and
  counted (lines, zones: ``counts`` in each JSON line, the totals in ``summary.counts`` and predictions.json);
  the annotated video shows ids, trails, lines and zones.

The per-image and per-video loops of one run are ``session.PredictSession``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import cv2
import numpy as np

from y9core.errors import SourceError
from y9deploy.pipelines.predict.class_options import class_thresholds, resolve_classes
from y9deploy.pipelines.predict.files import PredictionFiles, SaveOptions
from y9deploy.pipelines.predict.results import (
    JSON_NAME,
    JSONL_NAME,
    ResultsWriter,
    build_final_json,
    read_jsonl,
)
from y9deploy.pipelines.predict.session import PredictSession
from y9deploy.pipelines.predict.summary import PredictSummary
from y9deploy.pipelines.sources.frame_reader import (
    IMAGE_SUFFIXES,
    POLICIES,
    VIDEO_SUFFIXES,
    ReconnectPolicy,
    is_live,
    open_capture,
)
from y9deploy.pipelines.sources.kinds import (
    expand_glob,
    has_glob,
    is_url,
    source_entries,
    source_roots,
    url_kind,
)
from y9deploy.pipelines.tiling.sliced import TileOptions, predict_tiled_with


def collect_sources(source: Any) -> tuple[list[Path | str], list[str | Path]]:
    """A file, a folder (searched recursively, sorted), a glob, a URL or a camera index -> (images, videos); an
    image URL is one image, a video file URL one video, a stream URL or camera index one live video; a ``.txt``
    list of sources or a Python list of them: each entry in order (``y9deploy.pipelines.sources.kinds``).

    Raises:
        FileNotFoundError: the path does not exist, or no file matches the glob. ValueError: a file of another
        type, or a folder with no image or video in it.
    """
    entries = source_entries(source)
    if len(entries) > 1 or entries[0] is not source:
        images: list[Path | str] = []
        videos: list[str | Path] = []
        for entry in entries:
            more_images, more_videos = collect_sources(entry)
            images += more_images
            videos += more_videos
        return images, videos
    text = str(source)
    if is_url(text):
        return ([text], []) if url_kind(text) == "image" else ([], [text])
    if is_live(text):
        return [], [text]
    path = Path(source)
    if has_glob(text) and not path.exists():
        files = expand_glob(text)
    elif not path.exists():
        raise FileNotFoundError(
            f"source {path} does not exist; expected an image, a video, a folder, a glob or a stream URL."
        )
    else:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    images = [p for p in files if p.suffix.lower() in IMAGE_SUFFIXES]
    videos = [p for p in files if p.suffix.lower() in VIDEO_SUFFIXES]
    if not images and not videos:
        what = f"folder {path} holds no" if path.is_dir() else f"{path} is not an"
        what = f"no file matching {text} is an" if has_glob(text) and not path.exists() else what
        raise ValueError(
            f"{what} image ({', '.join(IMAGE_SUFFIXES)}) or video ({', '.join(VIDEO_SUFFIXES)}) file."
        )
    return images, videos


def done_frames(save_dir: Path) -> tuple[set[str], dict[str, int]]:
    """What a run in ``save_dir`` has a line for in its predictions.jsonl (what ``resume`` leaves out): the images,
    and for each video the index of the last frame done."""
    jsonl = save_dir / JSONL_NAME
    images: set[str] = set()
    last: dict[str, int] = {}
    for rec in read_jsonl(jsonl) if jsonl.is_file() else []:
        source, frame = str(rec.get("source")), rec.get("frame")
        if frame is None:
            images.add(source)
        else:
            last[source] = max(int(frame), last.get(source, -1))
    return images, last


def check_save_dir(save_dir: str | Path, source: str | Path) -> None:
    """Refuse a save_dir that is, or is inside, the source folder (or that is the folder of a source file).

    Raises:
        ValueError: one sentence naming both folders.
    """
    for root in source_roots(source):
        src, out = root.resolve(), Path(save_dir).resolve()
        if src.is_dir() and (out == src or src in out.parents):
            where = "is the source folder" if out == src else f"is inside the source folder {root}"
            raise ValueError(f"the output folder {save_dir} {where}; outputs there could overwrite or mix with the "
                             f"inputs. Expected a folder outside {root}.")  # fmt: skip
        if src.is_file() and out == src.parent:
            raise ValueError(f"the output folder {save_dir} is the folder that holds the input {root}; the "
                             "annotated copy would replace it. Expected another folder.")  # fmt: skip


def frame_runner(
    det: Any, given: dict[str, Any], *, classes: list[int | str] | None = None,
    class_conf: dict[str | int, float] | None = None, conf: float | None = None, tile: TileOptions | None = None,
) -> Callable[[list[np.ndarray]], list[Any]]:  # fmt: skip
    """frames -> their Detections through ``det`` with a run's options: ``given`` (conf, iou, max_det for this run),
    the classes kept (names or ids), per-class thresholds, tiling. The one place a run's options become Detector
    calls (``predict_source``, ``y9.Model.predict`` on in-memory images)."""
    names = list(det.names)
    overrides: dict[str, Any] = dict(given)
    ids = resolve_classes(classes, names)
    if ids is not None:
        overrides["classes"] = ids
    if class_conf:
        overrides["conf"] = class_thresholds(conf if conf is not None else det.defaults.conf, class_conf, names)

    def run(frames: list[np.ndarray]) -> list[Any]:
        if tile is not None:
            return [predict_tiled_with(det, f, tile, **overrides) for f in frames]
        return det.predict(frames, **overrides)

    return run


def predict_source(
    source: str | Path,
    model: str | Path | Any,
    *,
    save_dir: str | Path | None = None,
    conf: float | None = None,
    iou: float | None = None,
    max_det: int | None = None,
    classes: list[int | str] | None = None,
    class_conf: dict[str | int, float] | None = None,
    device: str | int | None = None,
    imgsz: int | None = None,
    vid_stride: int = 1,
    save_images: bool = True,
    batch: int = 1,
    tile: TileOptions | None = None,
    policy: str | None = None,
    reconnect: ReconnectPolicy | None = None,
    max_frames: int | None = None,
    final_json: bool = True,
    append: bool = False,
    resume: bool = False,
    save: SaveOptions | None = None,
    jsonl_stream: IO[str] | None = None,
    track: Any = None,
    stop: threading.Event | None = None,
    on_start: Callable[[int | None], None] | None = None,
    on_frame: Callable[[str, int], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_result: Callable[[str, int | None, np.ndarray, Any, Any], None] | None = None,
    draw: dict[str, Any] | None = None,
    agnostic: bool = False,
    half: bool | None = None,
) -> PredictSummary:
    """Detect objects in every image and video frame of ``source`` (module docstring).

    Args:
        source: an image, a video, a folder (recursive), a camera index or a stream URL.
        model: a model file for a new ``Detector``, or a ``Detector`` to use.
        save_dir: where outputs go (None: nothing saved; ``jsonl_stream`` may still get the JSON lines).
        conf, iou, max_det, device, imgsz: as ``Detector`` (None: its defaults). With a ready ``Detector``,
            ``conf``, ``iou``, ``max_det`` given here apply to this run; ``device`` and ``imgsz`` are its own
            (given here: refused).
        classes: keep only these classes, by id or name. class_conf: per-class score thresholds by name or id
            (the others keep ``conf``, else the Detector's).
        vid_stride: process every n-th frame of a video file.
        save_images: write annotated images / videos.
        batch: frames per Detector call. tile: sliced inference (``TileOptions``) instead of whole frames.
        policy, reconnect: the ``FrameReader`` policy and back-off for videos and streams.
        max_frames: stop each video or stream after this many frames.
        final_json: build ``predictions.json`` from the JSON lines at the end.
        append: add to the predictions files an earlier run left in ``save_dir`` (``predictions.json`` is then
            rebuilt from all their lines) instead of replacing them; annotated copies never replace a file.
        resume: go on with a stopped run in ``save_dir`` (implies ``append``): the images its predictions.jsonl
            already has a line for are not read again, and a video file goes on after its last frame done (the frames
            before it are decoded, not predicted); ``summary.resumed`` counts what was left out.
        save: YOLO label files, crops per class, COCO results (``files.SaveOptions``; needs save_dir).
        jsonl_stream: also write each JSON line there (e.g. ``sys.stdout``).
        track: ``source_tracking.TrackOptions``: track (and count) the objects of videos and streams.
        stop: set it to end the run after the current frame.
        on_start: called once with the expected number of frames (None when unknown: live streams).
        on_frame: called after each frame with (source name, detections in it). on_warning: skip/reconnect messages.
        on_result: called after each frame with (source name, frame index or None, the frame, its Detections, its
            track ids or None), once the frame's files are written (``y9.Model.predict`` makes its results of it).
        draw: ``draw_detections``' options (``thickness``, ``show_labels``, ``show_scores`` ...) for the annotated
            copies. agnostic: class-agnostic NMS. half: the new Detector's FP16 (None: its default).
    Raises:
        FileNotFoundError, ValueError: a missing source or model, a bad option, a save_dir inside the source;
        SourceError: a stream or camera (the only source) cannot be opened; the only image or video cannot be read
            (nothing is left in ``save_dir``).
    """
    from y9deploy.runtime.detector import Detector

    if int(batch) < 1:
        raise ValueError(f"batch={batch!r}; expected 1 or more frames per call.")
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"policy={policy!r}; expected one of {', '.join(POLICIES)} (or None: by source).")
    if int(vid_stride) < 1:
        raise ValueError(f"vid_stride={vid_stride!r}; expected 1 (every frame) or more.")
    warn = on_warning or (lambda msg: None)
    stop = stop or threading.Event()
    if save is not None and save.any and save_dir is None:
        raise ValueError(
            "label files, crops and COCO results need a save_dir; expected one with them (y9 predict: --project, --name)."
        )
    images, videos = collect_sources(source)
    inputs_given = len(images) + len(videos)
    resumed, last_done = 0, {}
    if resume:
        if save_dir is None:
            raise ValueError("resume goes on with the run in save_dir; expected a save_dir (y9 predict: --name).")
        append, (done, last_done) = True, done_frames(Path(save_dir))
        images, resumed = [p for p in images if str(p) not in done], sum(1 for p in images if str(p) in done)
        last_done = {k: v for k, v in last_done.items() if not is_live(k)}  # a stream's frame numbers start again
    skip_warn = warn if inputs_given > 1 else (lambda msg: None)  # the only input skipped: the error says it
    if track is not None and not videos:
        raise ValueError(f"tracking needs a video, stream or camera; {source} holds only images (a folder of frames "
                         "is a video to FrameReader, not to y9 predict: make a video of it).")  # fmt: skip
    out_dir = Path(save_dir) if save_dir is not None else None
    if out_dir is not None:
        check_save_dir(out_dir, source)
    summary = PredictSummary(save_dir=out_dir, resumed=resumed)
    counts: list[int | None] = []
    for v in list(videos):  # files probed up front: a bad one is skipped before any work
        if is_live(v):
            counts.append(None)
            continue
        try:
            cap = open_capture(v)
        except (OSError, ValueError) as exc:
            summary.skipped.append((str(v), str(exc)))
            skip_warn(f"skipped {v}: {exc}")
            videos.remove(v)
            continue
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        cap.release()
        n = (n + vid_stride - 1) // vid_stride if n > 0 else 0
        counts.append(min(n, max_frames) if max_frames is not None else n)
    total = None if any(c is None for c in counts) else len(images) + sum(counts)  # type: ignore[arg-type]
    own = not hasattr(model, "predict")
    given = {k: v for k, v in (("conf", conf), ("iou", iou), ("max_det", max_det)) if v is not None}
    if agnostic:
        given["agnostic"] = True
    if not own and (device is not None or imgsz is not None):
        raise ValueError(
            f"device={device!r}, imgsz={imgsz!r} with a ready {type(model).__name__}: its device and input size are "
            "set when it is made; expected them unset here (or a model file to make a new one)."
        )
    det = Detector(model, device=device, imgsz=imgsz, half=half, **given) if own else model
    try:
        names = list(det.names)
        run = frame_runner(det, {} if own else given, classes=classes, class_conf=class_conf, conf=conf, tile=tile)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        writer = ResultsWriter(out_dir, stream=jsonl_stream, append=append, tracking=track is not None)
        files = PredictionFiles(out_dir, save) if save is not None and save.any else None
        summary.jsonl_path, summary.csv_path = writer.jsonl_path, writer.csv_path
        if on_start is not None:
            on_start(total)
        inputs = {Path(p).resolve() for p in images if not is_url(p)}
        inputs |= {Path(str(v)).resolve() for v in videos if not is_url(v) and not is_live(v)}
        session = PredictSession(run, writer, summary, out_dir if save_images else None, inputs, stop, int(batch),
                           skip_warn, on_frame, track, files, on_result, last_done)  # fmt: skip
        session.draw = dict(draw or {})
        reading = dict(
            policy=policy, reconnect=reconnect, stride=vid_stride, max_frames=max_frames, on_event=warn
        )
        t0 = time.perf_counter()
        finished = False
        try:
            session.images(images)
            for video in videos:
                if stop.is_set():
                    break
                session.video(video, reading)
            if writer.frames == 0 and inputs_given == 1 and summary.skipped and not stop.is_set():
                raise SourceError(summary.skipped[-1][1])  # the one source failed: an error, no empty run folder
            finished = True
        finally:
            summary.interrupted = stop.is_set()
            summary.seconds = time.perf_counter() - t0
            writer.close()
            nothing_done = not finished and writer.frames == 0 and not append
            if files is not None:
                summary.files = files.discard() if nothing_done else files.close()
            failing = sys.exc_info()[1] is not None  # e.g. a write failed: that error is the one to report
            if nothing_done:  # e.g. a camera that cannot be opened
                for empty in (writer.jsonl_path, writer.csv_path):  # nothing was done: nothing is left behind
                    if empty is not None:
                        empty.unlink(missing_ok=True)
            elif writer.jsonl_path is not None and final_json:
                try:
                    summary.json_path = build_final_json(writer.jsonl_path, writer.jsonl_path.with_name(JSON_NAME),
                                                         model=str(getattr(det, "path", model)), names=names,
                                                         skipped=summary.skipped,
                                                         counts={k: v.to_dict() for k, v in summary.counts.items()})  # fmt: skip
                except OSError:
                    if not failing:
                        raise
    finally:
        if own:
            det.close()
    return summary
