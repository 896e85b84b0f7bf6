"""The files of a validation, written into one folder: what ``y9 val`` and the end of ``y9 train`` leave behind.

    report = write_val_report(result, "runs/val", save_json=True, about={"model": "best.pt", "data": "data.yaml"})
    report.files    # the paths written

- ``metrics.json``: the evaluator (name and version), what was validated (``about``), counts, the overall
  metrics, one entry per class (ground-truth boxes, P, R, mAP50, mAP50-95) and the thresholds of the matrix and
  the curves; undefined values (no ground truth of that kind) are null.
- ``per_class.csv``: the per-class rows (``class, name, n_gt, precision, recall, map50, map50_95``), classes
  without ground truth included with empty cells.
- ``curves.json``: the numbers behind the curve pictures (``y9core.evaluation.curves.ValCurves.to_dict``).
- ``confusion_matrix.csv``: counts, rows true class, columns predicted class, last row/column background
  (``y9core.evaluation.confusion``); ``confusion_matrix.png`` and ``confusion_matrix_normalized.png`` draw it.
- ``PR_curve.png``, ``F1_curve.png``, ``P_curve.png``, ``R_curve.png`` (``y9core.evaluation.plots``).
- ``predictions.json`` (``save_json``): every detection in the COCO results format (``y9core.evaluation.coco_results``;
  image id = the file stem's number, else the stem; category id: COCO's 91-class id for COCO-80 models, else the class
  id, ``y9core.evaluation.coco_categories``), the input of a COCO evaluation.

Each file is written atomically. Without matplotlib the pictures are left out and ``notes`` says so in one sentence.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError
from y9core.evaluation.coco_categories import category_ids_for
from y9core.evaluation.coco_results import coco_image_id, coco_rows
from y9core.evaluation.confusion import DEFAULT_CONF, DEFAULT_IOU, confusion_matrix
from y9core.files.atomic_write import atomic_write

PER_CLASS_COLUMNS = ("class", "name", "n_gt", "precision", "recall", "map50", "map50_95")
PICTURES = ("confusion_matrix.png", "confusion_matrix_normalized.png", "PR_curve.png", "F1_curve.png",
            "P_curve.png", "R_curve.png")  # fmt: skip


@dataclass(frozen=True)
class ValReport:
    """What ``write_val_report`` wrote: the folder, the files (in writing order) and notes (pictures left out)."""

    folder: Path
    files: list[Path]
    notes: list[str] = field(default_factory=list)


def _clean(value: Any) -> Any:
    """JSON-safe: nan / inf become None, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _names(result: Any) -> list[str]:
    return [str(c["name"]) for c in result.per_class]


def write_val_report(
    result: Any,
    folder: str | Path,
    *,
    save_json: bool = False,
    about: dict[str, Any] | None = None,
    conf: float = DEFAULT_CONF,
    iou: float = DEFAULT_IOU,
    pictures: bool = True,
) -> ValReport:
    """Write the files of a ``y9core.evaluation.result.ValResult`` into ``folder`` (module docstring).

    Args:
        result: a ValResult with its curves, predictions, ground truth and image files.
        save_json: also write ``predictions.json`` (COCO results).
        about: what was validated (model, data, split, image size, ...), recorded in metrics.json.
        conf, iou: the thresholds of the confusion matrix.
        pictures: also draw the PNG files (matplotlib); False writes the CSV and JSON files only.
    """
    folder = Path(folder)
    names = _names(result)
    nc = len(names)
    matrix = confusion_matrix(result.predictions, result.ground_truth, nc, conf=conf, iou=iou)
    files = [
        atomic_write(folder / "metrics.json", json.dumps(_clean(_metrics_doc(result, about, matrix)), indent=2) + "\n"),
        atomic_write(folder / "per_class.csv", _csv_text(list(PER_CLASS_COLUMNS), [
            [c[k] if not (isinstance(c[k], float) and math.isnan(c[k])) else "" for k in PER_CLASS_COLUMNS]
            for c in result.per_class])),
        atomic_write(folder / "confusion_matrix.csv", _csv_text(
            ["true \\ predicted", *names, "background"],
            [[label, *row] for label, row in zip([*names, "background"], matrix.counts.tolist(), strict=True)])),
    ]  # fmt: skip
    if result.curves is not None:
        files.append(atomic_write(folder / "curves.json", json.dumps(_clean(result.curves.to_dict(names))) + "\n"))
    if save_json:
        rows: list[dict[str, Any]] = []
        categories = category_ids_for(names)
        for path, p in zip(result.image_files, result.predictions, strict=True):
            p = np.asarray(p).reshape(-1, 6)
            rows.extend(coco_rows(p[:, :4], p[:, 4], p[:, 5].astype(np.int64), coco_image_id(Path(path).stem), categories))
        files.append(atomic_write(folder / "predictions.json", json.dumps(rows) + "\n"))
    notes: list[str] = []
    try:
        files += _pictures(result, names, matrix, folder) if pictures else []
    except BackendUnavailableError as exc:
        notes.append(str(exc))
    return ValReport(folder, files, notes)


def _pictures(result: Any, names: list[str], matrix: Any, folder: Path) -> list[Path]:
    from y9core.evaluation.plots import (
        plot_confidence_curve,
        plot_confusion_matrix,
        plot_pr_curve,
        require_matplotlib,
    )

    require_matplotlib()
    out = [plot_confusion_matrix(matrix, names, folder / PICTURES[0], normalized=False),
           plot_confusion_matrix(matrix, names, folder / PICTURES[1], normalized=True)]  # fmt: skip
    if result.curves is not None:
        out.append(plot_pr_curve(result.curves, names, folder / "PR_curve.png", map50=result.metrics["map50"]))
        out += [plot_confidence_curve(result.curves, names, which, folder / f"{which}_curve.png")
                for which in ("F1", "P", "R")]  # fmt: skip
    return out


def _metrics_doc(result: Any, about: dict[str, Any] | None, matrix: Any) -> dict[str, Any]:
    return {
        "evaluator": result.evaluator,
        **({"validated": dict(about)} if about else {}),
        "images": result.images,
        "targets": result.targets,
        "detections": result.detections,
        "seconds": round(result.seconds, 3),
        "ms_per_image": round(result.ms_per_image, 3),
        "metrics": dict(result.metrics),
        "per_class": [{k: c[k] for k in PER_CLASS_COLUMNS} for c in result.per_class],
        "confusion_matrix": {"file": "confusion_matrix.csv", "conf": matrix.conf, "iou": matrix.iou,
                             "rows": "true class", "columns": "predicted class", "last": "background"},
        "curves": {"file": "curves.json", "pr_iou": 0.5},
    }  # fmt: skip
