"""The result of validating one model on one split, shared by the trainer's validation and the validation of
deployed files (ONNX models, engines): numpy only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError

METRIC_KEYS = (
    "precision",
    "recall",
    "map50",
    "map50_95",
    "map75",
    "map_small",
    "map_medium",
    "map_large",
    "fitness",
)


@dataclass
class ValResult:
    """Validation of one model on one split.

    Attributes:
        metrics: ``precision``, ``recall``, ``map50``, ``map50_95``, ``map75``, ``map_small``, ``map_medium``,
            ``map_large``, ``fitness`` (fractions; nan when undefined, e.g. no ground truth of that size).
        per_class: one dict per class (``class``, ``name``, ``n_gt``, ``map50``, ``map50_95``, ...).
        images / targets / detections: counts; seconds: wall time; ms_per_image: inference + post-processing.
        evaluator: what computed the AP figures (``y9core.evaluation.metrics.evaluator_name``).
        imgsz: the model input size the images were letterboxed to, (h, w) (None: not recorded).
        curves: PR and P/R/F1-confidence curves per class (``y9core.evaluation.curves.ValCurves``).
        predictions / ground_truth / image_files: per image, the detections ``(x1, y1, x2, y2, score, class)``,
            the labels ``(class, x1, y1, x2, y2)`` (source pixels) and the file: what the report files
            (``y9core.evaluation.report``) are made from.
    """

    metrics: dict[str, float]
    per_class: list[dict[str, Any]] = field(default_factory=list)
    images: int = 0
    targets: int = 0
    detections: int = 0
    seconds: float = 0.0
    ms_per_image: float = 0.0
    evaluator: str = ""
    curves: Any = field(default=None, repr=False)
    predictions: list[np.ndarray] = field(default_factory=list, repr=False)
    ground_truth: list[np.ndarray] = field(default_factory=list, repr=False)
    image_files: list[str] = field(default_factory=list, repr=False)
    imgsz: tuple[int, int] | None = None
    save_dir: Path | None = None  # where the report files were written (``y9.Model.val``, ``y9 val``)

    @property
    def box(self) -> Any:
        """``y9core.evaluation.box_metrics.BoxMetrics``: ``map``, ``map50``, ``map75``, ``maps``, ``mp``, ``mr``."""
        from y9core.evaluation.box_metrics import BoxMetrics

        return BoxMetrics.of(self.metrics, self.per_class)

    @property
    def results_dict(self) -> dict[str, float]:
        """The figures under YOLO tools' keys (``metrics/mAP50-95(B)`` ...; ``y9core.evaluation.box_metrics``)."""
        from y9core.evaluation.box_metrics import results_dict

        return results_dict(self.metrics)

    @property
    def speed(self) -> dict[str, float]:
        """Milliseconds per image: ``inference`` (inference + post-processing, as measured)."""
        return {"inference": self.ms_per_image}

    @classmethod
    def from_evaluation(
        cls, res: dict[str, Any], predictions: list[np.ndarray], ground_truth: list[np.ndarray],
        image_files: list[str], *, seconds: float, infer_seconds: float, imgsz: tuple[int, int] | None = None,
    ) -> ValResult:  # fmt: skip
        """The result of ``y9core.evaluation.metrics.evaluate(predictions, ground_truth)`` (``res``) on ``image_files``."""
        return cls(
            metrics={k: float(res[k]) for k in METRIC_KEYS},
            per_class=res["per_class"],
            images=res["n_images"],
            targets=res["n_targets"],
            detections=res["n_preds"],
            seconds=seconds,
            ms_per_image=1000.0 * infer_seconds / max(res["n_images"], 1),
            evaluator=res.get("evaluator", ""),
            curves=res.get("curves"),
            predictions=list(predictions),
            ground_truth=list(ground_truth),
            image_files=[str(f) for f in image_files],
            imgsz=None if imgsz is None else (int(imgsz[0]), int(imgsz[1])),
        )

    def at(self) -> str:
        """`` at HxW`` (the input size), or nothing when it is not recorded."""
        return f" at {self.imgsz[0]}x{self.imgsz[1]}" if self.imgsz else ""

    @property
    def fitness(self) -> float:
        return self.metrics["fitness"]

    def __str__(self) -> str:
        m = self.metrics
        pct = {k: "-" if m.get(k) != m.get(k) else f"{100 * m[k]:.1f}" for k in METRIC_KEYS if k in m}  # nan: "-"
        return (
            f"{self.images} images{self.at()}, {self.targets} boxes, {self.detections} detections, "
            f"{self.seconds:.1f} s: "
            f"mAP50-95 {pct['map50_95']}, mAP50 {pct['map50']}, P {pct['precision']}, R {pct['recall']} (percent)"
        )


def require_metrics_backend() -> None:
    """Raise one sentence when the COCO evaluation package is missing."""
    try:
        import faster_coco_eval  # noqa: F401
    except ImportError:
        raise BackendUnavailableError(
            "validation needs the faster-coco-eval package, which is not installed; install it "
            "(pip install faster-coco-eval, or the y9[train] extra) or train with val=False."
        ) from None
