"""``y9.Model``: one object that holds a model through train -> val -> export -> predict -> benchmark.

    m = y9.Model("gelan-s")                       # an architecture (fresh weights): train it first
    result = m.train(data="data.yaml", epochs=50) # m now holds the run's best.pt
    m = y9.Model("runs/train/exp/weights/best.pt")   # a checkpoint, y9's or the official format
    print(m.info())                               # architecture, trained size, classes, parameters
    print(m.val(data="data.yaml"))                # y9core.val_result.ValResult
    onnx = m.export("best.onnx")                  # -> Path
    dets = m.predict("image.jpg")                 # y9.Detections
    y9.Model("best.onnx").benchmark(batch_sizes=(1, 8))

A thin object over the library functions the ``y9`` commands call (``y9train.train.train``,
``y9.val.val_model``, ``y9deploy.export_onnx``, ``y9deploy.Detector``,
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
            raise FileNotFoundError(
                f"model file {path} does not exist." if not path.exists() else f"model path {path} is a folder, "
                "not a model file."
            )
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
        self._detector: Any = None
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

    def val(
        self, data: str | Path, *, save_dir: str | Path | None = None, save_json: bool = False, **options: Any
    ) -> Any:
        """COCO metrics on a data.yaml split (``y9.val.val_model``, as ``y9 val``; options
        ``split``, ``batch``, ``conf``, ``iou``, ``device`` ...). A checkpoint is validated at its trained size
        unless ``imgsz`` is given. ``save_dir``: also write the report files there (``y9core.val_report``:
        metrics.json, curves, confusion matrix, pictures; ``save_json``: predictions.json). Returns
        ``y9core.val_result.ValResult``."""
        path = self._needs_weights("be validated")
        from y9.val import val_model

        result = val_model(data, path, **options)  # imgsz None: the library's rule (the trained size)
        if save_dir is not None:
            from y9core.val_report import write_val_report

            about = {"model": str(path), "data": str(data), "split": options.get("split", "val"),
                     "imgsz": list(result.imgsz) if result.imgsz else options.get("imgsz")}  # fmt: skip
            write_val_report(result, save_dir, save_json=save_json, about=about)
        return result

    def export(self, path: str | Path | None = None, **options: Any) -> Path:
        """ONNX export of a checkpoint (``y9deploy.export_onnx``; options ``dynamic_batch``, ``half``, ``end2end``
        ...) at its trained size unless ``imgsz`` is given; ``path`` defaults to the checkpoint's with ``.onnx``.
        Returns the ONNX path."""
        source = self._needs_weights("be exported")
        if self.kind != "checkpoint":
            raise ValueError(f"{source} is already a deployed {self.kind} file; export works on .pt checkpoints.")
        from y9deploy.export.onnx_export import export_onnx

        return export_onnx(source, Path(path) if path is not None else source.with_suffix(".onnx"), **options)

    def predict(self, source: Any, **overrides: Any) -> Any:
        """Detections of a frame (ndarray[H, W, 3] uint8 BGR), an image path, a list of them, or a folder of
        images (its images, sorted). ``overrides``: ``conf``, ``iou``, ``max_det``, ``classes``, ``agnostic`` for
        this call. The ``Detector`` (default options, the model's own input size) is made on the first call and
        kept until ``close()``. Returns ``Detections`` for one frame or image, else a list of them."""
        path = self._needs_weights("predict")
        if isinstance(source, (str, Path)) and Path(source).is_dir():
            from y9deploy.pipelines.predict.run import collect_sources

            images, videos = collect_sources(source)
            if videos:
                raise ValueError(
                    f"folder {source} holds videos ({Path(str(videos[0])).name}, ...); Model.predict takes images: "
                    "use y9deploy.pipelines.predict.run.predict_source (y9 predict) for videos."
                )
            source = list(images)
        if self._detector is None:
            from y9deploy.runtime.detector import Detector

            self._detector = Detector(path)
        return self._detector.predict(source, **overrides)

    def benchmark(self, batch_sizes: Sequence[int] = (1,), **options: Any) -> Any:
        """Latency and throughput (``y9deploy.benchmark``; options ``iters``, ``warmup``, ``device``, ``stream``
        ...). Returns the ``BenchmarkResult``."""
        path = self._needs_weights("be benchmarked")
        from y9deploy.bench import benchmark

        return benchmark(path, batch_sizes=tuple(batch_sizes), **options)

    def close(self) -> None:
        """Release the Detector ``predict`` keeps (a later ``predict`` makes a new one)."""
        if self._detector is not None:
            self._detector.close()
            self._detector = None

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
