"""``Detector``: one line from a model file to detections.

    with Detector("yolov9-s.engine") as det:        # or .onnx / .pt
        dets = det.predict(frame)                    # frame: HxWx3 uint8 BGR
        dets.xyxy, dets.confidence, dets.class_id, dets.names

The backend comes from the file suffix (``runtime.backends.loading``), the model's facts from the file itself.
A Detector runs one pipeline (``runtime.pipeline.Pipeline``), decided by ``runtime.frame_pipeline.choose_pipeline``:
on a CUDA backend with torch the torch pipeline (``runtime.gpu_pipeline``), else the host pipeline
(``runtime.host_pipeline``); post-processing is ``y9core.post.choice.choose_post``'s. ``repr(det)`` and
``det.choice()`` name them. ``predict_stream(batches)`` pipelines a sequence of batches; both take a stage timer
(``timer=``, e.g. ``y9deploy.measure.stage_timer.StageTimer``).

Threads: a Detector serves one thread at a time (it reuses its buffers, CUDA stream and graphs); another thread
calling it while it is busy gets DetectorBusyError at once, never wrong results (``BusyGuard``, below).

One frame with the Detector's own options takes its frame plan (``runtime.frame_plan``: what the host pipeline
decides per batch, decided once per frame size), which the Detector runs itself (``_run_plan``); everything else
(lists, batches, paths, per-call options, a timer) goes through the pipeline's ``run`` in ``batch_chunks``.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import DetectorBusyError, Y9Error
from y9core.model_facts import FactsWarning, ModelFacts, size_notice
from y9deploy.post.options import PredictOptions, resolve_options
from y9deploy.runtime.backends.loading import open_backend
from y9deploy.runtime.frame_pipeline import build_pipeline
from y9deploy.runtime.gpu_pipeline import torch_stream_for
from y9deploy.runtime.image_file import frames_of, read_image  # noqa: F401 - read_image re-exported here
from y9deploy.runtime.pipeline import NULL_TIMER, Pipeline, batch_chunks

#: frame sizes whose plans a Detector keeps (a video has one; a folder of photos of many sizes makes new ones)
MAX_PLANS = 8
MISSING = object()


class Detector:
    """YOLOv9 detector over a TensorRT engine, an ONNX model or a checkpoint.

    Args:
        path: ``.engine``/``.trt``/``.plan`` (with its ``.json`` manifest), ``.onnx`` or ``.pt``; None: the
            embedded default model (``y9deploy.default_model_path()``, 80 COCO classes).
        device: None (CUDA when the backend can use a GPU here, else CPU), "cpu", "cuda", "cuda:N".
        conf: score threshold (a detection needs a score > conf), or one threshold per class.
        iou: IoU threshold of the NMS.
        max_det: most detections per image.
        classes: keep only these class ids (None: all).
        agnostic: class-agnostic NMS.
        imgsz: network input for ``.pt`` files (default: its trained size); ONNX models and engines fix their own.
        half: FP16 for ``.pt`` on CUDA (default True there).
        cuda_graph: replay the network as a CUDA graph (torch and TensorRT on CUDA; default True).
        preprocess: on a CUDA backend with torch: "auto"/"hybrid" (letterbox by OpenCV threads, colour/layout on
            the GPU), "gpu" (letterboxed on the GPU), "cpu" (the whole blob made on the CPU). Without torch or CUDA
            everything runs on the host ("gpu" is then refused).
        postprocess: on a CUDA backend with torch: "auto"/"gpu" (batched decode + NMS on the GPU) or "cpu" (on the
            host, which is what runs without torch or CUDA: "gpu" is then refused); ``choose_post`` decides.
        compile: ``torch.compile`` a ``.pt`` model on CUDA (slow first call per batch size).
        facts: for a TensorRT engine built without ``y9 build-engine`` (no manifest): the ONNX it was built from or
            its ``.facts.json`` sidecar (default: found beside the engine).

    ``info`` holds the model's facts (``ModelFacts``); a model run at another input size than it was trained at
    says so once, as a ``FactsWarning``.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        device: str | int | None = None,
        conf: float | Any = 0.25,
        iou: float = 0.45,
        max_det: int = 300,
        classes: list[int] | None = None,
        agnostic: bool = False,
        imgsz: int | tuple[int, int] | None = None,
        half: bool | None = None,
        cuda_graph: bool = True,
        preprocess: str = "auto",
        postprocess: str = "auto",
        compile: bool = False,
        facts: str | Path | None = None,
    ) -> None:
        from y9core.post.choice import OPTIONS as POST_OPTIONS
        from y9deploy.pre.impl import OPTIONS as PRE_OPTIONS

        for name, value, options in (("preprocess", preprocess, PRE_OPTIONS), ("postprocess", postprocess, POST_OPTIONS)):
            if value not in options:  # checked here, before the model file is opened
                raise ValueError(f"{name}={value!r}; expected one of {', '.join(map(repr, options))}.")
        if path is None:
            from y9deploy.default_model import default_model_path

            path = default_model_path()
        if not isinstance(path, (str, Path)):
            raise TypeError(
                f"path is a {type(path).__name__}; expected the path of a .engine, .onnx or .pt file."
            )
        self.path = Path(path)
        self._guard = BusyGuard(str(self.path))
        self._closed = True
        self._pipeline: Any = None
        self._plans: dict[Any, Any] | None = None  # frame plans by (shape, dtype); None: the pipeline has none
        stream = torch_stream_for(self.path, device)
        self._stream = stream  # kept alive as long as the backend may run on it
        self.backend = open_backend(
            self.path,
            device=device,
            imgsz=imgsz,
            half=half,
            cuda_graph=cuda_graph,
            stream=None if stream is None else int(stream.cuda_stream),
            compile=compile,
            facts=facts,
        )
        self._closed = False
        try:
            self._setup(conf, iou, max_det, classes, agnostic, preprocess, postprocess, stream)
        except BaseException:
            self.close()  # a bad option must not leave the model loaded
            raise

    def _setup(
        self,
        conf: Any,
        iou: float,
        max_det: int,
        classes: Any,
        agnostic: bool,
        preprocess: str,
        postprocess: str,
        stream: Any,
    ) -> None:
        self.info: ModelFacts = self.backend.info
        self.names: list[str] = list(self.info.names)
        self.imgsz: tuple[int, int] = tuple(self.backend.input_hw)  # type: ignore[assignment]
        notice = size_notice(self.info, self.imgsz, self.path.name)
        if notice is not None:
            warnings.warn(notice, FactsWarning, stacklevel=3)
        self.end2end: bool = bool(self.backend.end2end)
        given = dict(conf=conf, iou=iou, max_det=max_det, classes=classes, agnostic=agnostic)
        self.defaults: PredictOptions = resolve_options(None, given, nc=len(self.names), end2end=self.end2end)
        try:
            self._pipeline = build_pipeline(
                self.backend, self.info, preprocess=preprocess, postprocess=postprocess, stream=stream
            )
        except ValueError as exc:
            raise ValueError(str(exc).replace("the backend", self.path.name, 1)) from None
        self._plans = {} if hasattr(self._pipeline, "frame_plan") else None

    @property
    def device(self) -> str:
        return str(self.backend.device)

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline predictions run through (``HostPipeline`` or ``GpuPipeline``); its ``pre`` and ``post``
        name the implementations in use."""
        return self._pipeline

    @pipeline.setter
    def pipeline(self, new: Pipeline) -> None:
        """Run through ``new`` from now on (e.g. a ``GpuPipeline`` built over ``self.backend`` with other
        options); the previous pipeline is closed."""
        if not isinstance(new, Pipeline):
            raise TypeError(
                f"pipeline is a {type(new).__name__}; expected an object with run, run_stream, close, kind, pre, post "
                "and cuda (y9deploy.runtime.pipeline.Pipeline)."
            )
        with self._guard.enter("pipeline"):
            old, self._pipeline = self._pipeline, new
            self._plans = {} if hasattr(new, "frame_plan") else None
            if old is not None and old is not new:
                old.close()

    def choice(self) -> dict[str, str]:
        """The implementations in use: ``{"pipeline": ..., "preprocess": ..., "postprocess": ...}``
        (``runtime.frame_pipeline.choose_pipeline``, ``y9core.post.choice.choose_post``)."""
        p = self._pipeline
        return {"pipeline": str(p.kind), "preprocess": str(p.pre), "postprocess": str(p.post)}

    def __repr__(self) -> str:
        if self._pipeline is None:
            return f"Detector({str(self.path)!r}, closed)"
        c = self.choice()
        return (
            f"Detector({str(self.path)!r}, backend={self.backend.name}, device={self.device}, imgsz={self.imgsz}, "
            f"classes={len(self.names)}, end2end={self.end2end}, pipeline={c['pipeline']}, "
            f"preprocess={c['preprocess']}, postprocess={c['postprocess']})"
        )

    def predict(self, source: Any, *, timer: Any = None, **overrides: Any) -> Any:
        """Detect objects.

        Args:
            source: one frame (ndarray[H, W, 3] uint8 BGR), a batch ndarray[B, H, W, 3], an image path, or a
                list of frames and/or image paths.
            timer: a stage timer (``mark(stage)``, e.g. ``y9deploy.measure.stage_timer.StageTimer``; None: none).
            **overrides: per-call ``conf``, ``iou``, ``max_det``, ``classes``, ``agnostic``.
        Returns:
            ``Detections`` for one frame or path; ``list[Detections]`` for a list or a 4-D batch.
        """
        with self._guard.enter("predict"):
            return self._predict_unguarded(source, overrides, NULL_TIMER if timer is None else timer)

    def track(
        self, frames: Iterable[Any], *, tracker: str = "bytetrack", fps: float = 30.0, lines: Any = (),
        zones: Any = (), **overrides: Any,
    ) -> Iterator[Any]:  # fmt: skip
        """Detect and track objects over a sequence of frames (a video), one frame after the other.

        Args:
            frames: an iterable of frames (ndarray[H, W, 3] uint8 BGR), in time order, ``fps`` per second.
            tracker: ``"bytetrack"`` or ``"botsort"`` (``y9deploy.tracking.make_tracker``).
            lines, zones: ``y9deploy.tracking.counting.CountLine`` / ``Zone`` to count on the tracks.
            **overrides: per-call ``conf``, ``iou``, ... as for ``predict``.
        Returns:
            an iterator of ``y9deploy.tracking.TrackedDetections``, one per frame.
        """
        from y9deploy.tracking.source_tracking import SourceTracking, TrackOptions

        run = SourceTracking(TrackOptions(tracker, tuple(lines), tuple(zones)), fps=fps)
        for k, frame in enumerate(frames):
            yield run.step(self.predict(frame, **overrides), k / fps, frame)

    def predict_stream(
        self, batches: Iterable[Any], *, timer: Any = None, track: str | None = None, fps: float = 30.0,
        **overrides: Any,
    ) -> Iterator[list[Any]]:  # fmt: skip
        """Detect objects in a sequence of batches, pipelined: on a CUDA backend with torch, the letterbox and upload
        of the next batch run in a background thread (two staging buffers) while the device works on the current one
        (``runtime.gpu_stream``); on the host path the batches run one after the other.

        Args:
            batches: an iterable of batches (each a list of frames and/or image paths, or an ndarray[B, H, W, 3]).
            timer: a stage timer, as for ``predict``.
            track: ``"bytetrack"`` or ``"botsort"``: the batches are consecutive frames of one video (``fps`` per
                second), tracked in order; each list then holds ``y9deploy.tracking.TrackedDetections``.
            **overrides: per-call ``conf``, ``iou``, ``max_det``, ``classes``, ``agnostic`` (all batches).
        Returns:
            an iterator of ``list[Detections]``, one list per batch, in order (the detections ``predict`` gives).
            Memory is bounded: batches are pulled at most two ahead of the results. Until the stream ends or is
            closed, other threads calling this Detector get DetectorBusyError.
        """
        if self.backend is None:
            raise Y9Error(f"this Detector for {self.path} was closed; create a new one.")
        if isinstance(batches, (np.ndarray, str, Path)) or not hasattr(batches, "__iter__"):
            raise TypeError(
                f"predict_stream() got a {type(batches).__name__}; expected an iterable of batches (each a list "
                "of frames or an ndarray[B, H, W, 3]); for one batch use predict()."
            )
        opts = resolve_options(self.defaults, overrides, nc=len(self.names), end2end=self.end2end)
        stream = self._stream_batches(iter(batches), opts, NULL_TIMER if timer is None else timer)
        if track is None:
            return stream
        from y9deploy.tracking.source_tracking import track_stream

        return track_stream(stream, track, fps)

    def _stream_batches(self, batches: Iterator[Any], opts: PredictOptions, timer: Any) -> Iterator[list[Any]]:
        def chunks() -> Iterator[tuple[list[np.ndarray], int, bool]]:
            for batch in batches:
                frames, _ = frames_of(batch)
                spans = batch_chunks(len(frames), self.backend.batch_range)
                for j, (start, stop, padded) in enumerate(spans):
                    yield frames[start:stop], padded, j == len(spans) - 1

        with self._guard.enter("predict_stream"):  # held until the stream is exhausted or closed
            done: list[Any] = []
            for dets, last in self._pipeline.run_stream(chunks(), opts, timer):
                done += dets
                if last:
                    yield done
                    done = []
                    if self.backend is None:
                        raise Y9Error(f"this Detector for {self.path} was closed during predict_stream().")

    def warmup(self, batch: int = 1, frame_hw: tuple[int, int] | None = None, runs: int = 2) -> None:
        """Run ``runs`` dummy predictions of ``batch`` grey frames (cuDNN autotuning, CUDA graph capture)."""
        h, w = frame_hw or self.imgsz
        frames = [np.full((h, w, 3), 114, np.uint8) for _ in range(batch)]
        for _ in range(runs):
            self.predict(frames)

    def close(self) -> None:
        """Free the backend, buffers and CUDA graphs; idempotent."""
        if getattr(self, "_closed", True) and getattr(self, "backend", None) is None:
            return
        with self._guard.enter("close"):
            self._close()

    def _close(self) -> None:
        backend, self.backend = getattr(self, "backend", None), None
        pipeline, self._pipeline = getattr(self, "_pipeline", None), None
        self._plans = None
        self._closed = True
        if pipeline is not None:
            pipeline.close()
        if backend is not None:
            backend.close()
        self._stream = None  # after the backend: onnxruntime may run on it

    def __enter__(self) -> Detector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    def _predict_unguarded(self, source: Any, overrides: dict[str, Any], timer: Any) -> Any:
        if self.backend is None:
            raise Y9Error(f"this Detector for {self.path} was closed; create a new one.")
        if self._plans is not None and not overrides and timer is NULL_TIMER and type(source) is np.ndarray:
            plan = self._plans.get((source.shape, source.dtype), MISSING) if source.ndim == 3 else None
            if plan is MISSING or (plan is not None and plan.opts is not self.defaults):
                plan = self._plan_for(source)
            if plan is not None:
                return self._run_plan(plan, source)
        opts = self.defaults  # checked once, in _setup
        if overrides:
            opts = resolve_options(self.defaults, overrides, nc=len(self.names), end2end=self.end2end)
        frames, single = frames_of(source)
        results: list[Any] = []
        for start, stop, padded in batch_chunks(len(frames), self.backend.batch_range):
            results += self._pipeline.run(frames[start:stop], padded, opts, timer)
        return results[0] if single else results

    def _plan_for(self, frame: np.ndarray) -> Any:
        """The pipeline's frame plan for frames of this shape under the defaults (``runtime.frame_plan``; the frame
        is checked there), kept for the next frames (at most ``MAX_PLANS`` sizes); None: the pipeline's ``run``."""
        plan = self._pipeline.frame_plan(frame, self.defaults)
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        self._plans[(frame.shape, frame.dtype)] = plan
        return plan

    def _run_plan(self, plan: Any, frame: np.ndarray) -> Any:
        """One frame along its plan (``runtime.frame_plan.FramePlan``): the letterbox steps, then one call each
        into the backend (its ``infer`` looked up now, as ``pipeline.run`` does), the decode + NMS and
        ``Detections``."""
        pre = plan.pre
        pre.load(frame)
        for step in pre.steps:
            step()
        xyxy, scores, classes = plan.rows(self.backend.infer(pre.blob)[plan.output])
        return plan.detections(xyxy, scores, classes)


class BusyGuard:
    """Admits one thread at a time; re-entrant for that thread (``predict`` between two batches of its own
    ``predict_stream``); another thread gets DetectorBusyError at once rather than waiting: two threads in one
    Detector would overwrite each other's reused buffers, and a silent queue would hide that design error."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._entry = ""

    @contextlib.contextmanager
    def enter(self, call: str) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                raise DetectorBusyError(
                    f"{call}() was called on the Detector for {self.what} while another thread is running its "
                    f"{self._entry}(); a Detector serves one thread at a time: create one Detector per thread, "
                    "or guard the shared one with a threading.Lock."
                )
            if self._owner is None:
                self._owner, self._entry = me, call
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
