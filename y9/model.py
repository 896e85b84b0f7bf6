"""``y9.Model``: one object that holds a model through train -> val -> export -> predict -> benchmark.

    m = y9.Model("gelan-s")                       # an architecture (fresh weights): train it first
    result = m.train(data="data.yaml", epochs=50) # m now holds the run's best.pt
    m = y9.Model("runs/train/exp/weights/best.pt")   # a checkpoint, y9's or the official format
    print(m.info())                               # architecture, trained size, classes, parameters
    print(m.val(data="data.yaml"))                # y9core.val_result.ValResult
    onnx = m.export("best.onnx")                  # -> Path
    results = m.predict("clip.mp4")               # list[y9.Result] (stream=True: one at a time; save=True: runs/)
    m.track("clip.mp4", persist=True)             # results with track ids
    y9.Model("best.onnx").benchmark(batch_sizes=(1, 8))

A thin object over the library functions the ``y9`` commands call (``y9train.train.train``,
``y9.val.val_model``, ``y9deploy.export_onnx_report``, ``predict_source`` through ``y9.predict_run``,
``y9deploy.benchmark``): no logic of its own but the defaults, which come from the model's own facts (the image
size it was trained at, its class names), read in one place (``Model._facts``). Torch is imported only for
architectures and ``.pt`` checkpoints; ``.onnx`` and ``.engine`` files need only the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the kinds of model a ``Model`` holds
KINDS = ("architecture", "checkpoint", "onnx", "engine")


@dataclass(frozen=True)
class ModelSummary:
    """What ``Model.info()`` returns.

    Attributes:
        source: the file or model name given. kind: one of ``KINDS``.
        architecture: the model name (gelan-s, yolov9-c, ...; "" when the file does not record it).
        imgsz: (h, w) the model was trained at (checkpoints), or the file's fixed input (ONNX, engines).
        names: class names, index = class id.
        params, gflops: parameter count and GFLOPs at ``imgsz`` (architectures and checkpoints; None otherwise).
    """

    source: str
    kind: str
    architecture: str
    imgsz: tuple[int, int]
    names: tuple[str, ...]
    params: int | None = None
    gflops: float | None = None

    @property
    def nc(self) -> int:
        return len(self.names)

    def __str__(self) -> str:
        shown = ", ".join(self.names[:8]) + (f", ... ({self.nc} in all)" if self.nc > 8 else "")
        size = "trained at" if self.kind == "checkpoint" else "input"
        lines = [
            f"{self.source} ({self.kind})",
            f"  architecture  {self.architecture or '(not recorded)'}",
            f"  image size    {self.imgsz[0]}x{self.imgsz[1]} ({size})",
            f"  classes       {self.nc}: {shown}",
        ]
        if self.params is not None:
            lines.append(f"  parameters    {self.params:,}")
        if self.gflops is not None:
            lines.append(f"  GFLOPs        {self.gflops:.1f} at {self.imgsz[0]}x{self.imgsz[1]}")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Facts:
    """The facts every default comes from (one record; ``Model._facts`` reads it)."""

    architecture: str
    imgsz: tuple[int, int]
    names: tuple[str, ...]


def _kind_of(source: str | Path) -> str:
    """One of ``KINDS`` for a model name or a file, checked at the boundary (one sentence when it is neither)."""
    from y9deploy.runtime.loading import ENGINE_SUFFIXES, ONNX_SUFFIXES, TORCH_SUFFIXES

    path = Path(source)
    suffix = path.suffix.lower()
    kinds = {**dict.fromkeys(TORCH_SUFFIXES, "checkpoint"), **dict.fromkeys(ONNX_SUFFIXES, "onnx"),
             **dict.fromkeys(ENGINE_SUFFIXES, "engine")}  # fmt: skip
    if suffix in kinds:
        if not path.is_file():
            from y9.model_files import missing_model_message

            raise FileNotFoundError(missing_model_message(source))  # the CLI's words too (y9.model_files)
        return kinds[suffix]
    from y9train.models.config import MODEL_NAMES, unknown_model_message

    if str(source) in MODEL_NAMES or suffix in (".yaml", ".yml"):
        return "architecture"
    raise ValueError(unknown_model_message(str(source)) + " A file must end in .pt, .onnx or .engine.")


def _hw(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, int) else (int(value[0]), int(value[1]))


class Model:
    """A model name (``"gelan-s"``), a ``.yaml`` config, a ``.pt`` checkpoint, an ``.onnx`` model or an engine.

    Args:
        source: what to hold; None: the embedded default model (``y9.default_model_path()``).
    Raises:
        FileNotFoundError: a model file that does not exist. ValueError: neither a model name nor a model file.
    """

    def __init__(self, source: str | Path | None = None) -> None:
        if source is None:
            from y9deploy.default_model import default_model_path

            source = default_model_path()
        if not isinstance(source, (str, Path)):
            raise TypeError(
                f"source is a {type(source).__name__}; expected a model name (gelan-s, ...) or the path of a .pt, "
                ".onnx or .engine file."
            )
        from y9.model_files import restricted_load
        from y9deploy.model_file.official_weights import is_official_name, weights_path

        if is_official_name(source):  # official weights by name ("yolov9-c.pt"): downloaded once, then cached
            source = weights_path(source, verify=restricted_load)
        self._detector: Any = None
        self._detector_key: Any = None
        self._tracking: Any = None  # the tracks ``track(persist=True)`` keeps between calls
        self._hold(source)

    def _hold(self, source: str | Path) -> None:
        """Hold ``source`` (checked); forget what was read from the previous model."""
        self.kind = _kind_of(source)
        self.source = source if self.kind == "architecture" else Path(source)
        self._cached_facts: _Facts | None = None
        self._network: Any = None  # the torch model of an architecture or checkpoint, built on first need

    def __repr__(self) -> str:
        return f"Model({str(self.source)!r}, kind={self.kind!r})"

    @property
    def path(self) -> Path | None:
        """The model file (None for an architecture)."""
        return None if self.kind == "architecture" else Path(self.source)

    # -------------------------------------------------------------------------------- the model's facts
    def _torch_network(self) -> Any:
        if self._network is None:
            if self.kind == "architecture":
                from y9train.models import build_model

                self._network = build_model(self.source)
            else:
                from y9train.checkpoint import load_checkpoint

                self._network = load_checkpoint(self.source)
        return self._network

    def _facts(self) -> _Facts:
        """Trained image size, class names and architecture, read once from the model's own facts record
        (``y9deploy.read_facts``: the checkpoint's, the ONNX metadata's, the engine manifest's). The one place that
        reads them."""
        if self._cached_facts is not None:
            return self._cached_facts
        if self.kind == "architecture":
            from y9train.checkpoint_facts import facts_of

            facts = facts_of(self._torch_network())
        else:
            from y9deploy.facts import read_facts

            facts = read_facts(self.source)
        self._cached_facts = _Facts(facts.model, _hw(facts.imgsz), tuple(facts.names))
        return self._cached_facts

    @property
    def names(self) -> list[str]:
        """Class names, index = class id."""
        return list(self._facts().names)

    @property
    def imgsz(self) -> tuple[int, int]:
        """(h, w): the size a checkpoint was trained at, or the fixed input of an ONNX model or engine."""
        return self._facts().imgsz

    def _needs_weights(self, action: str) -> Path:
        if self.kind == "architecture":
            raise ValueError(
                f"{self.source} is an architecture with untrained weights, so it cannot {action}; train it "
                "first (Model.train) or open a checkpoint."
            )
        return Path(self.source)

    # -------------------------------------------------------------------------------- actions
    def info(self) -> ModelSummary:
        """Architecture, image size, classes; parameters and GFLOPs for architectures and checkpoints."""
        f = self._facts()
        params = gflops = None
        if self.kind in ("architecture", "checkpoint"):
            from y9train.models.complexity import model_info

            summary = model_info(self._torch_network(), f.imgsz)
            params, gflops = summary.params, summary.gflops
        return ModelSummary(str(self.source), self.kind, f.architecture, f.imgsz, f.names, params, gflops)

    def train(self, data: str | Path, **options: Any) -> Any:
        """Train from this architecture or checkpoint (``y9train.train.train``; options as ``y9 train``'s, e.g.
        ``epochs``, ``batch``, ``imgsz``, ``device``). A checkpoint trains at its own size unless ``imgsz`` is
        given (the trainer's rule). Afterwards this Model holds the run's best.pt (else its last.pt). Returns the
        ``TrainResult``."""
        if self.kind in ("onnx", "engine"):
            raise ValueError(f"{self.source} is a deployed {self.kind} file; train from its .pt checkpoint.")
        from y9train.train import train

        result = train(data=data, model=str(self.source), **options)
        weights = result.best or result.last
        if weights is not None:
            self.close()
            self._hold(weights)
        return result

    def val(self, data: str | Path, **options: Any) -> Any:
        """COCO metrics on a data.yaml split with ``y9 val``'s options (``split``, ``batch``, ``conf``, ``iou``,
        ``device``, ``imgsz`` ...; ``y9.val.validate``). A checkpoint is validated at its trained size unless
        ``imgsz`` is given. The report files (metrics.json, curves, confusion matrix, pictures; ``save_json``:
        predictions.json) are written into ``save_dir``, or the run folder ``project``/``name`` names (as
        ``y9 val``'s). Returns ``y9core.val_result.ValResult``; a wrong option is one sentence (TypeError)."""
        from y9.val import validate

        return validate(data, self._needs_weights("be validated"), **options)

    def export(self, path: str | Path | None = None, **options: Any) -> Path:
        """ONNX export of a checkpoint with ``y9 export``'s options (``y9deploy.export_onnx_report``: ``imgsz``,
        ``batch``, ``dynamic_batch``, ``half``, ``simplify``, ``end2end``, ``opset``, ``check`` (the parity check,
        default on), ``conf``/``iou``/``max_det`` (end2end) ...) at its trained size unless ``imgsz`` is given;
        ``path`` defaults to the checkpoint's with ``.onnx``. Returns the ONNX path; a wrong option is one
        sentence (TypeError)."""
        from y9.options import check_options
        from y9deploy.export.onnx_export import export_onnx_report

        check_options("Model.export", options, export_onnx_report, drop=("source", "path"))
        source = self._needs_weights("be exported")
        if self.kind != "checkpoint":
            raise ValueError(f"{source} is already a deployed {self.kind} file; export works on .pt checkpoints.")
        if path is None:  # beside the checkpoint; here for official weights downloaded by name (not in the cache)
            from y9deploy.model_file.official_weights import cache_dir

            path = Path(source.name if source.parent == cache_dir() else source).with_suffix(".onnx")
        target = Path(path)
        return export_onnx_report(source, target, **options).path

    def predict(self, source: Any, stream: bool = False, save: bool = False, **options: Any) -> Any:
        """Detections of every image and frame of ``source``, as ``y9 predict`` reads it: an image, a folder, a glob,
        a ``.txt`` list of paths, a video, a stream URL, a camera index (int), a numpy BGR / PIL image, or a list of
        these (``y9.predict_run``).

        Args:
            stream: yield each ``Result`` as it is done (a generator: videos and streams are never held in memory)
                instead of returning the list at the end.
            save: write the run folder ``y9 predict`` writes (``runs/predict``, ``runs/predictN``: predictions.jsonl,
                .csv, .json, annotated copies; ``project``, ``name``, ``exist_ok``, ``save_txt``, ``save_json`` ...).
            options: ``y9.options.PredictOptions`` (``conf``, ``iou``, ``imgsz``, ``device``, ``classes``,
                ``vid_stride``, ``batch``, ``tile`` ...); a name that is not one is a TypeError sentence.
        Returns:
            ``list[y9.Result]`` (``stream=False``) or an iterator of them; each carries its source ``path``,
            ``frame`` index, ``orig_img``, ``detections``, ``plot()``, ``save()``, ``to_json()``, ``to_coco()``.
        """
        return self._run("Model.predict", source, stream, save, None, options)

    def track(self, source: Any, persist: bool = False, tracker: str = "bytetrack", stream: bool = False,
              save: bool = False, **options: Any) -> Any:  # fmt: skip
        """``predict`` with tracking (``y9 predict --track``): each result has ``track_id`` (-1: no track yet).

        Args:
            tracker: "bytetrack", or "botsort" (camera-motion compensation, for moving cameras).
            persist: keep the tracks between calls on in-memory frames (``m.track(frame, persist=True)`` in a loop);
                each video or stream is tracked from its first frame to its last in any case.
        """
        from y9deploy.tracking.options import TrackerKind
        from y9deploy.tracking.source_tracking import TrackOptions

        kinds = [k.value for k in TrackerKind]
        if str(tracker) not in kinds:
            raise ValueError(f"tracker={tracker!r}; expected one of {', '.join(kinds)}.")
        track = TrackOptions(str(tracker))
        if not persist or self._tracking is None or self._tracking.options.tracker != track.tracker:
            self._tracking = None
        return self._run("Model.track", source, stream, save, track, options)

    def _run(self, action: str, source: Any, stream: bool, save: bool, track: Any, options: dict[str, Any]) -> Any:
        from y9.options import PredictOptions
        from y9.predict_run import frames_of, produce, stream_results

        opts = PredictOptions.from_kwargs(action, options)
        frames_of(source)  # a wrong kind of source: one sentence now, not in the worker
        detector = self._detector_for(opts.device, opts.imgsz)
        if track is not None and self._tracking is None:
            from y9deploy.tracking.source_tracking import SourceTracking

            self._tracking = SourceTracking(track, fps=30.0)
        tracking = self._tracking if track is not None else None

        def run(emit: Any, stop: Any) -> Any:
            return produce(detector, source, save=bool(save), track=track, options=opts, tracking=tracking,
                           emit=emit, stop=stop, on_warning=self._warn)  # fmt: skip

        if stream:
            return stream_results(run)
        import threading

        results: list[Any] = []
        run(results.append, threading.Event())
        return results

    @staticmethod
    def _warn(message: str) -> None:
        import warnings

        warnings.warn(message, stacklevel=3)

    def _detector_for(self, device: Any, imgsz: Any) -> Any:
        """The Detector ``predict`` keeps, made again when ``device`` or ``imgsz`` asks for another one."""
        path = self._needs_weights("predict")
        key = (device, imgsz)
        if self._detector is None or self._detector_key != key:
            from y9deploy.runtime.detector import Detector

            self.close()
            self._detector = Detector(path, device=device, imgsz=imgsz)
            self._detector_key = key
        return self._detector

    def benchmark(self, batch_sizes: Sequence[int] | None = None, **options: Any) -> Any:
        """Latency and throughput with ``y9 benchmark``'s options (``y9deploy.benchmark``: ``iters``, ``warmup``,
        ``idle_ms``, ``device``, ``imgsz``, ``conf`` ...; ``batch`` as the CLI's ``--batch``: an int, "1,8" or a
        list, the same as ``batch_sizes``). Returns the ``BenchmarkResult``; a wrong option is one sentence."""
        from y9.options import check_options
        from y9deploy.bench import benchmark
        from y9deploy.runtime.detector import Detector

        batch = options.pop("batch", None)
        check_options("Model.benchmark", options, benchmark, Detector, drop=("path", "batch_sizes", "self"))
        if batch is not None and batch_sizes is not None:
            raise TypeError("Model.benchmark() got both batch and batch_sizes; expected one of them.")
        sizes = batch if batch is not None else batch_sizes if batch_sizes is not None else (1,)
        if isinstance(sizes, str):
            sizes = [s for s in sizes.replace(" ", "").split(",") if s]
        sizes = [sizes] if isinstance(sizes, int) else list(sizes)
        try:
            sizes = [int(s) for s in sizes]
        except (TypeError, ValueError):
            raise ValueError(f"batch sizes {sizes!r}; expected whole numbers, e.g. (1, 8) or '1,8'.") from None
        path = self._needs_weights("be benchmarked")
        return benchmark(path, batch_sizes=tuple(sizes), **options)

    def close(self) -> None:
        """Release the Detector ``predict`` keeps (a later ``predict`` makes a new one)."""
        if self._detector is not None:
            self._detector.close()
            self._detector = None
        self._tracking = None

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
