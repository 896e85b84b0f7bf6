"""``y9.Model``: one object that holds a model through train -> val -> export -> predict -> benchmark.

    m = y9.Model("gelan-s")                       # an architecture (fresh weights): train it first
    result = m.train(data="data.yaml", epochs=50) # m now holds the run's best.pt
    m = y9.Model("runs/train/exp/weights/best.pt")   # a checkpoint, y9's or the official format
    print(m.info())                               # architecture, trained size, classes, parameters
    print(m.val(data="data.yaml"))                # y9core.evaluation.result.ValResult
    onnx = m.export("best.onnx")                  # -> Path
    results = m.predict("clip.mp4")               # list[y9.Result] (stream=True: one at a time; save=True: runs/)
    m.track("clip.mp4", persist=True)             # results with track ids
    y9.Model("best.onnx").benchmark(batch_sizes=(1, 8))

A thin object over the library functions the ``y9`` commands call (``y9train.run.train.train``,
``y9.val.val_model``, ``y9deploy.export_onnx_report``, ``predict_source`` through ``y9.predict_run``,
``y9deploy.benchmark``): no logic of its own but the defaults, which come from the model's own facts (the image
size it was trained at, its class names), read in one place (``Model._facts``). Torch is imported only for
architectures and ``.pt`` checkpoints; ``.onnx`` and ``.engine`` files need only the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from y9.model_source import KINDS, Facts, ModelSummary, hw, kind_of

__all__ = ["KINDS", "Model", "ModelSummary"]


def _verbose(emit: Any) -> Any:
    """``emit`` that first prints the result's line (``verbose=True``): source, size, counts, milliseconds."""

    def say(result: Any) -> None:
        h, w = result.orig_shape
        ms = sum(result.speed.values())
        print(f"{result.path}{'' if result.frame is None else f' frame {result.frame}'}: {h}x{w} "
              f"{result.verbose()}{ms:.1f} ms")  # fmt: skip
        emit(result)

    return say


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
        self._callbacks: dict[str, list[Any]] = {}  # the trainer's, by event (``add_callback``)
        self._device: Any = None  # ``to(device)``: the device predict and val use unless given
        self._hold(source)

    def _hold(self, source: str | Path) -> None:
        """Hold ``source`` (checked); forget what was read from the previous model."""
        self.kind = kind_of(source)
        self.source = source if self.kind == "architecture" else Path(source)
        self._cached_facts: Facts | None = None
        self._network: Any = None  # the torch model of an architecture or checkpoint, built on first need

    def __repr__(self) -> str:
        return f"Model({str(self.source)!r}, kind={self.kind!r})"

    task = "detect"  # what YOLO tools call the model's task: y9 detects boxes

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_"):
            raise AttributeError(name)
        from y9.keywords import missing_attribute

        raise missing_attribute("Model", name, dir(type(self)))

    @property
    def model(self) -> Any:
        """The torch network of an architecture or checkpoint (None for an ONNX model or an engine)."""
        return self._torch_network() if self.kind in ("architecture", "checkpoint") else None

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

    def _facts(self) -> Facts:
        """Trained image size, class names and architecture, read once from the model's own facts record
        (``y9deploy.read_facts``: the checkpoint's, the ONNX metadata's, the engine manifest's). The one place that
        reads them."""
        if self._cached_facts is not None:
            return self._cached_facts
        if self.kind == "architecture":
            from y9train.checkpoints.facts import facts_of

            facts = facts_of(self._torch_network())
        else:
            from y9deploy.facts import read_facts

            facts = read_facts(self.source)
        self._cached_facts = Facts(facts.model, hw(facts.imgsz), tuple(facts.names))
        return self._cached_facts

    @property
    def names(self) -> dict[int, str]:
        """Class names as ``{class id: name}``."""
        return dict(enumerate(self._facts().names))

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

    @property
    def device(self) -> str:
        """Where ``predict`` runs: the Detector's device once one is open, else what ``to()`` set (or "auto")."""
        if self._detector is not None:
            return str(self._detector.device)
        return "auto" if self._device is None else str(self._device)

    def to(self, device: Any) -> Model:
        """Run ``predict``, ``track`` and ``val`` on ``device`` ("cpu", 0, "cuda:0" ...) unless they are given one."""
        from y9core.device_spec import parse_device

        parse_device(str(device) if not isinstance(device, str) else device)  # one sentence for a bad name
        self._device = device
        self.close()
        return self

    def cpu(self) -> Model:
        return self.to("cpu")

    def cuda(self, index: int = 0) -> Model:
        return self.to(f"cuda:{index}")

    def fuse(self) -> Model:
        """Nothing to do: y9 fuses Conv+BN and RepConvN whenever it runs or exports a model. Returns the Model."""
        return self

    def eval(self) -> Model:
        return self

    def add_callback(self, event: str, fn: Any) -> None:
        """Call ``fn(trainer)`` at ``event`` of the next ``train`` (y9's events, ``y9train.loop.hooks.EVENTS``, or YOLO
        tools' names for them: ``on_train_epoch_end``, ``on_fit_epoch_end``, ``on_train_batch_end`` ...)."""
        from y9.keywords import EVENTS

        if event not in EVENTS:
            raise ValueError(f"add_callback({event!r}): y9's trainer has the events {', '.join(sorted(EVENTS))}; "
                             "expected one of them (validation and prediction have no callbacks).")  # fmt: skip
        if not callable(fn):
            raise TypeError(f"add_callback({event!r}, {fn!r}): expected a function of the trainer.")
        self._callbacks.setdefault(EVENTS[event], []).append(fn)

    def __call__(self, source: Any = None, stream: bool = False, **options: Any) -> Any:
        """``predict`` (``model(source)`` as YOLO tools call it)."""
        return self.predict(source, stream=stream, **options)

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

    def train(self, data: str | Path | None = None, **options: Any) -> Any:
        """Train from this architecture or checkpoint (``y9train.run.train.train``; options as ``y9 train``'s, e.g.
        ``epochs``, ``batch``, ``imgsz``, ``device``). A checkpoint trains at its own size unless ``imgsz`` is
        given (the trainer's rule). Afterwards this Model holds the run's best.pt (else its last.pt). Returns the
        ``TrainResult``."""
        if self.kind in ("onnx", "engine"):
            raise ValueError(f"{self.source} is a deployed {self.kind} file; train from its .pt checkpoint.")
        from y9.keywords import train_options
        from y9train.run.train import train

        run, over = train_options(options, None if self.kind == "architecture" else str(self.source))
        if over:
            given = run.pop("overrides", None) or {}
            if isinstance(given, (list, tuple)):
                from y9train.optimisation.hyp import parse_overrides

                given = parse_overrides(list(given))
            run["overrides"] = {**over, **dict(given)}
        if self._callbacks:
            run["callbacks"] = {e: [*fns, *(run.get("callbacks") or {}).get(e, [])] for e, fns in self._callbacks.items()}
        result = train(data=data, model=str(self.source), **run)
        weights = result.best or result.last
        if weights is not None:
            self.close()
            self._hold(weights)
        return result

    def val(self, data: str | Path | None = None, **options: Any) -> Any:
        """COCO metrics on a data.yaml split with ``y9 val``'s options (``split``, ``batch``, ``conf``, ``iou``,
        ``device``, ``imgsz`` ...; ``y9.val.validate``). A checkpoint is validated at its trained size unless
        ``imgsz`` is given. The report files (metrics.json, curves, confusion matrix, pictures; ``save_json``:
        predictions.json) are written into ``save_dir``, or the run folder ``project``/``name`` names (as
        ``y9 val``'s). Returns ``y9core.evaluation.result.ValResult``; a wrong option is one sentence (TypeError)."""
        from y9.val import validate

        if data is None:
            raise TypeError("Model.val() needs data='data.yaml' (the split to score); y9 does not keep the training "
                            "data's path with a model.")  # fmt: skip
        if self._device is not None:
            options.setdefault("device", str(self._device))
        return validate(data, self._needs_weights("be validated"), **options)

    def export(self, path: str | Path | None = None, int8: bool = False, data: Any = None, **options: Any) -> Path:
        """ONNX export of a checkpoint with ``y9 export``'s options (``y9deploy.export_onnx_report``: ``imgsz``,
        ``batch``, ``dynamic_batch``, ``half``, ``simplify``, ``end2end``, ``opset``, ``check`` (the parity check,
        default on), ``conf``/``iou``/``max_det`` (end2end) ...) at its trained size unless ``imgsz`` is given;
        ``format`` 'onnx' or 'engine' (YOLO tools' ``dynamic``, ``nms``, ``workspace`` too: ``y9.model_export``);
        ``path``'s suffix must be the format's; without ``path``: beside the checkpoint (the embedded model's, inside
        the package: ``runs/export[N]``). ``int8=True`` with ``data`` (a data.yaml): a QDQ INT8 ONNX
        (``y9deploy.int8.export.export_int8``: its train images calibrate, its val split gates the accuracy;
        ``NAME-int8.onnx``). Returns the file's path; a wrong option is one sentence (TypeError)."""
        from y9.model_export import export_model

        source = self._needs_weights("be exported")
        if self.kind != "checkpoint":
            raise ValueError(f"{source} is already a deployed {self.kind} file; export works on .pt checkpoints.")
        return export_model(source, path, options, int8=int8, data=data)

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
        if str(tracker).endswith((".yaml", ".yml")) and Path(str(tracker)).stem in kinds and not Path(tracker).is_file():
            tracker = Path(str(tracker)).stem  # YOLO tools' tracker configs by name: bytetrack.yaml, botsort.yaml
        if str(tracker) not in kinds:
            raise ValueError(f"tracker={tracker!r}; expected one of {', '.join(kinds)}.")
        track = TrackOptions(str(tracker))
        if not persist or self._tracking is None or self._tracking.options.tracker != track.tracker:
            self._tracking = None
        return self._run("Model.track", source, stream, save, track, options)

    def _run(self, action: str, source: Any, stream: bool, save: bool, track: Any, options: dict[str, Any]) -> Any:
        from y9.keywords import check_bool
        from y9.options import PredictOptions
        from y9.predict_run import TimedDetector, frames_of, produce, stream_results

        save = check_bool(action, "save", save)
        stream = check_bool(action, "stream", stream)
        opts = PredictOptions.from_kwargs(action, options)
        frames_of(source)  # a wrong kind of source: one sentence now, not in the worker
        agnostic = {"agnostic": True} if opts.agnostic_nms else {}
        detector = TimedDetector(self._detector_for(opts.device, opts.imgsz, opts.half), **agnostic)
        if track is not None and self._tracking is None:
            from y9deploy.tracking.source_tracking import SourceTracking

            self._tracking = SourceTracking(track, fps=30.0)
        tracking = self._tracking if track is not None else None

        def run(emit: Any, stop: Any) -> Any:
            if opts.verbose:
                emit = _verbose(emit)
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

    def _detector_for(self, device: Any, imgsz: Any, half: bool | None = None) -> Any:
        """The Detector ``predict`` keeps, made again when ``device``, ``imgsz`` or ``half`` asks for another one."""
        path = self._needs_weights("predict")
        device = self._device if device is None else device
        key = (device, imgsz, half)
        if self._detector is None or self._detector_key != key:
            from y9deploy.runtime.detector import Detector

            self.close()
            self._detector = Detector(path, device=device, imgsz=imgsz, half=half)
            self._detector_key = key
        return self._detector

    def benchmark(self, batch_sizes: Sequence[int] | None = None, **options: Any) -> Any:
        """Latency and throughput with ``y9 benchmark``'s options (``y9deploy.benchmark``: ``iters``, ``warmup``,
        ``idle_ms``, ``device``, ``imgsz``, ``conf`` ...; ``batch`` as the CLI's ``--batch``: an int, "1,8" or a
        list, the same as ``batch_sizes``). Returns the ``BenchmarkResult``; a wrong option is one sentence."""
        from y9.options import check_options
        from y9deploy.measure.bench import benchmark
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
