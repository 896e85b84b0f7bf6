"""How ``y9.Model.predict`` and ``.track`` run: the CLI's own pipeline, with its results handed back as ``Result``s.

- Files, folders, globs, ``.txt`` lists, videos, stream URLs, cameras and lists of them go through
  ``y9deploy.pipelines.predict.run.predict_source``, the function behind ``y9 predict`` (one reading of sources,
  one writing of run folders); each frame comes back through its ``on_result`` hook.
- In-memory images (numpy BGR arrays, PIL images, lists of them) go through the same ``frame_runner`` (the run's
  options as Detector calls) and, with ``save``, the same ``ResultsWriter``.
- ``save=True``: the run folder of ``y9 predict`` (``runs/predict``, ``runs/predict2`` ...; ``project``/``name``/
  ``exist_ok`` as its options), decided by ``y9core.files.run_dir.resolve_output_dir`` and held by its ``RunLock``; a run
  that fails before writing anything leaves no folder behind.
- ``TimedDetector``: the Detector with each call timed per stage, so that each ``Result`` carries ``speed``
  (milliseconds per frame for ``preprocess``, ``inference`` and ``postprocess``, as YOLO tools report them).
- ``stream=True``: the pipeline runs in a worker thread and hands each result over as it is done (a bounded queue:
  the pipeline waits for the consumer); leaving the loop early stops the run after the current frame.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from y9.options import PredictOptions
from y9.results import Result

_DONE = object()


def in_memory(item: Any) -> bool:
    """A numpy array or a PIL image (not a path)."""
    return isinstance(item, np.ndarray) or (hasattr(item, "convert") and hasattr(item, "mode") and hasattr(item, "size"))


def as_frame(item: Any) -> np.ndarray:
    """An in-memory image -> ndarray[H, W, 3] uint8 BGR (PIL images are RGB: converted; arrays are taken as BGR)."""
    if isinstance(item, np.ndarray):
        return item
    return np.ascontiguousarray(np.asarray(item.convert("RGB"))[:, :, ::-1])


def frames_of(source: Any) -> list[np.ndarray] | None:
    """The frames of an in-memory source (one image or a list of them); None: a source of paths.

    Raises:
        TypeError: a list that mixes images and paths, or an object that is neither.
    """
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    kinds = {in_memory(i) for i in items}
    if kinds == {True}:
        return [as_frame(i) for i in items]
    if isinstance(source, np.ndarray) or kinds == {True, False}:
        raise TypeError("the source list mixes in-memory images and paths; expected a list of one kind.")
    bad = [i for i in items if not isinstance(i, (str, Path, int))]
    if bad:
        raise TypeError(f"a source is a {type(bad[0]).__name__}; expected an image, video, folder, glob, .txt list, "
                        "URL or camera index (str, Path or int), a numpy / PIL image, or a list of them.")  # fmt: skip
    return None


@contextlib.contextmanager
def run_folder(source: Any, options: PredictOptions) -> Iterator[Any]:
    """The run folder ``y9 predict`` would write (``y9core.files.run_dir.resolve_output_dir``), held by a ``RunLock``;
    removed again when the run fails before anything is written in it."""
    from y9core.files.run_dir import RunLock, resolve_output_dir
    from y9deploy.pipelines.sources.kinds import source_roots

    project = Path(options.project) if options.project is not None else Path("runs")
    explicit = project / options.name if options.name is not None else None
    inputs = source_roots(source) if frames_of(source) is None else []
    run = resolve_output_dir(explicit, task="predict", exist_ok=options.exist_ok, inputs=inputs, project=project)
    lock = RunLock(run.path)
    lock.acquire()
    try:
        yield run
    except BaseException:
        lock.release()
        run.remove_if_unused()
        raise
    lock.release()


def _images(detector: Any, frames: list[np.ndarray], options: PredictOptions, tracking: Any, save_dir: Path | None,
            append: bool, emit: Callable[[Result], None], folder: Any = None) -> None:  # fmt: skip
    """In-memory images through ``frame_runner``; with ``save_dir`` their annotated copies and JSON lines."""
    from y9deploy.pipelines.predict.results import JSON_NAME, ResultsWriter, build_final_json
    from y9deploy.pipelines.predict.run import frame_runner

    kw = options.source_kwargs()
    given = {k: kw[k] for k in ("conf", "iou", "max_det") if kw[k] is not None}
    run = frame_runner(detector, given, classes=kw["classes"], class_conf=kw["class_conf"], conf=kw["conf"],
                       tile=kw["tile"])  # fmt: skip
    writer = ResultsWriter(save_dir, append=append, tracking=tracking is not None) if save_dir is not None else None
    try:
        for start in range(0, len(frames), options.batch):
            chunk = frames[start : start + options.batch]
            for k, (frame, dets) in enumerate(zip(chunk, run(chunk)), start=start):
                ids = tracking.step(dets, None, frame).track_id if tracking is not None else None
                result = Result(f"image{k}", None, frame, dets, ids, save_dir, folder, _speed(detector))
                if writer is not None:
                    writer.write(result.path, None, dets, track_id=ids)
                    if options.save_images:
                        result.save(**options.draw())
                emit(result)
    finally:
        if writer is not None:
            writer.close()
            if writer.jsonl_path is not None and writer.frames:
                build_final_json(writer.jsonl_path, writer.jsonl_path.with_name(JSON_NAME),
                                 model=str(getattr(detector, "path", "")), names=list(detector.names))  # fmt: skip


class TimedDetector:
    """Wraps a ``y9deploy.Detector``: ``predict`` passes a ``StageTimer`` and keeps the last call's stage times per
    frame in ``speed``; everything else is the Detector's."""

    def __init__(self, detector: Any, **overrides: Any) -> None:
        self._detector = detector
        self._overrides = overrides  # options of every call (agnostic NMS)
        self.speed: dict[str, float] = {}

    def predict(self, source: Any, **options: Any) -> Any:
        from y9deploy.measure.stage_timer import StageTimer

        timer = StageTimer()
        out = self._detector.predict(source, timer=timer, **{**self._overrides, **options})
        n = len(out) if isinstance(out, list) else 1
        ms = timer.stages_ms()
        self.speed = {"preprocess": ms["pre"] / max(n, 1), "inference": ms["infer"] / max(n, 1),
                      "postprocess": ms["post"] / max(n, 1)}  # fmt: skip
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._detector, name)


def _speed(detector: Any) -> dict[str, float]:
    """The last call's milliseconds per frame by stage (a ``TimedDetector``; else none)."""
    return dict(getattr(detector, "speed", None) or {})


def produce(detector: Any, source: Any, *, save: bool, track: Any, options: PredictOptions, tracking: Any,
            emit: Callable[[Result], None], stop: threading.Event, on_warning: Callable[[str], None] | None) -> Any:  # fmt: skip
    """Run ``source`` through ``detector`` and ``emit`` each frame's ``Result``; returns the ``PredictSummary`` of
    a source of paths (None for in-memory images)."""
    frames = frames_of(source)
    if not save and options.saves_files:
        raise ValueError("save_txt, save_conf, save_crop and save_json write files into the run folder; expected "
                         "save=True with them.")  # fmt: skip
    with run_folder(source, options) if save else contextlib.nullcontext() as run:
        save_dir = run.path if run is not None else None
        append = bool(run is not None and run.earlier)
        from y9.save_target import RunFolder

        folder = RunFolder(options.project if options.project is not None else "runs")  # Result.save()'s default
        if frames is not None:
            _images(detector, frames, options, tracking, save_dir, append, emit, folder)
            return None
        from y9deploy.pipelines.predict.run import predict_source

        def on_result(name: str, index: int | None, image: np.ndarray, dets: Any, ids: Any) -> None:
            emit(Result(name, index, image, dets, ids, save_dir, folder, _speed(detector)))

        text = str(source) if isinstance(source, int) else source
        return predict_source(text, detector, save_dir=save_dir, append=append, track=track, stop=stop,
                              on_result=on_result, on_warning=on_warning, **options.source_kwargs())  # fmt: skip


def stream_results(run: Callable[[Callable[[Result], None], threading.Event], Any], depth: int = 4) -> Iterator[Result]:
    """``run(emit, stop)`` in a worker thread; its results yielded as they come (at most ``depth`` waiting). An error
    in the run is raised here; closing the generator early stops the run after the current frame."""
    handoff: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def emit(result: Result) -> None:
        while not stop.is_set():
            try:
                handoff.put(result, timeout=0.1)
                return
            except queue.Full:
                continue

    def work() -> None:
        try:
            run(emit, stop)
            outcome: Any = _DONE
        except BaseException as exc:  # handed to the consumer, raised there
            outcome = exc
        while True:
            try:
                handoff.put(outcome, timeout=0.1)
                return
            except queue.Full:
                if stop.is_set():
                    with contextlib.suppress(queue.Empty):
                        handoff.get_nowait()  # the consumer has gone: make room for the end marker

    worker = threading.Thread(target=work, name="y9-predict", daemon=True)
    worker.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
