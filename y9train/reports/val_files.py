"""The validation files at the end of a training run: ``y9core.evaluation.report``'s files (metrics.json, per_class.csv,
curves, confusion matrix, pictures) for the epoch whose weights are ``best.pt``, written into the run folder.

The trainer keeps the ``ValResult`` of its best epoch (no extra validation pass); a resumed run whose best epoch
came before the resume reports the best epoch validated since, and metrics.json names the epoch and the weights
either way. Optional like results.png: a failure is reported, never raised over the run's own outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_training_val_report(
    save_dir: Path | None, best: tuple[int, Any] | None, best_epoch: int, about: dict[str, Any], reporter: Any,
    *, pictures: bool = True,
) -> Path | None:
    """Write the report of ``best`` ((epoch index, ValResult)) into ``save_dir``; returns the folder or None.

    Args:
        best_epoch: the run's best epoch index (``best`` may be an earlier-validated one after a resume).
        about: what was trained (data, model, image size), recorded in metrics.json.
        pictures: also draw the curves and confusion matrix (``plots=false`` leaves them out).
    """
    if save_dir is None or best is None:
        return None
    from y9core.evaluation.report import write_val_report

    epoch, result = best
    weights = "weights/best.pt" if epoch == best_epoch else "weights/last.pt"
    try:
        report = write_val_report(result, save_dir, about={**about, "epoch": epoch + 1, "weights": weights},
                                  pictures=pictures)
    except OSError as exc:
        reporter.warn(f"no validation files: {exc}")
        return None
    for note in report.notes:
        reporter.info(note)
    reporter.info(f"validation of epoch {epoch + 1} ({weights}): metrics.json, per_class.csv, curves and "
                  f"confusion matrix in {save_dir}")  # fmt: skip
    return save_dir
