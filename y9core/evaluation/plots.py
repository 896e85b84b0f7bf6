"""The pictures of a validation: PR curve, F1/P/R against the confidence, confusion matrix.

matplotlib is imported inside each function and drawn through its Agg canvas (no GUI backend, no global pyplot
state); without it ``require_matplotlib`` raises one sentence. Figures have fixed pixel sizes (``CURVE_PX``,
``MATRIX_PX``): the layout engine fits the content inside them.

Curves: one thin line per class with ground truth (a legend names them when there are at most ``LEGEND_MAX``),
and a thick line for the mean over those classes, labelled with its figure: mAP50 for the PR curve (the mean of
the curve is the mean AP50), the best value and its threshold for F1, P and R.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError

CURVE_PX = (900, 600)  # (width, height) of the curve pictures
MATRIX_PX = (1300, 1150)  # of the confusion matrix pictures (room for 80 class names on each axis)
LEGEND_MAX = 12
_DPI = 100
CONFIDENCE_CURVES = {"F1": "f1", "P": "precision", "R": "recall_at"}  # picture name -> ValCurves attribute
_TITLES = {"F1": "F1", "P": "precision", "R": "recall"}


def require_matplotlib() -> None:
    """One sentence when matplotlib (which draws the pictures) is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BackendUnavailableError(
            "the validation pictures need matplotlib, which is not installed (pip install matplotlib, or the "
            "y9[train] extra); the numbers are in metrics.json, per_class.csv and curves.json."
        ) from None


def _figure(px: tuple[int, int]) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(px[0] / _DPI, px[1] / _DPI), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | Path) -> Path:
    """The PNG written atomically (rendered in memory, then ``y9core.files.atomic_write``)."""
    import io

    from y9core.files.atomic_write import atomic_write

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return atomic_write(path, buf.getvalue())


def _class_lines(ax: Any, x: np.ndarray, rows: np.ndarray, classes: np.ndarray, names: list[str]) -> None:
    legend = len(classes) <= LEGEND_MAX
    for c in classes:
        ax.plot(x, rows[c], linewidth=1, alpha=0.8 if legend else 0.35, color=None if legend else "grey",
                label=names[c] if legend else None)  # fmt: skip


def _finish(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)


def plot_pr_curve(curves: Any, names: list[str], path: str | Path, *, map50: float) -> Path:
    """``PR_curve.png``: interpolated precision against recall at IoU 0.50 (``ValCurves.pr``)."""
    require_matplotlib()
    fig = _figure(CURVE_PX)
    ax = fig.add_subplot()
    classes = curves.classes
    _class_lines(ax, curves.recall, curves.pr, classes, names)
    if len(classes):
        ax.plot(curves.recall, curves.pr[classes].mean(0), linewidth=3, color="tab:blue",
                label=f"all classes: mAP50 {map50:.3f}")  # fmt: skip
    _finish(ax, "recall", "precision", "precision-recall at IoU 0.50")
    return _save(fig, path)


def plot_confidence_curve(curves: Any, names: list[str], which: str, path: str | Path) -> Path:
    """``F1_curve.png``, ``P_curve.png`` or ``R_curve.png`` (``which``: "F1", "P", "R") against the confidence."""
    require_matplotlib()
    rows = getattr(curves, CONFIDENCE_CURVES[which])
    fig = _figure(CURVE_PX)
    ax = fig.add_subplot()
    classes = curves.classes
    _class_lines(ax, curves.confidence, rows, classes, names)
    if len(classes):
        mean = rows[classes].mean(0)
        best = int(np.argmax(mean))
        ax.plot(curves.confidence, mean, linewidth=3, color="tab:blue",
                label=f"all classes: {mean[best]:.3f} at {curves.confidence[best]:.2f}")  # fmt: skip
    _finish(ax, "confidence threshold", _TITLES[which], f"{_TITLES[which]} against the confidence threshold")
    return _save(fig, path)


def tick_font_size(n: int) -> float:
    """The type size (points) of ``n`` class names along a matrix axis of ``MATRIX_PX``: 8 up to 31, down to 5 for
    the 81 rows of a COCO model (its 80 classes and the background), smaller still beyond."""
    return 8.0 if n <= 31 else 6.0 if n <= 61 else max(3.0, 5.5 * 81 / max(n, 81))


def plot_confusion_matrix(matrix: Any, names: list[str], path: str | Path, *, normalized: bool) -> Path:
    """``confusion_matrix.png`` (counts) or ``confusion_matrix_normalized.png`` (each true class's row sums to 1).

    Only the classes that occur (in a row or a column) are drawn, plus the background; the axes always name them
    (``tick_font_size``: smaller type for more classes), and the cells carry their values when at most 30 are."""
    require_matplotlib()
    counts = matrix.counts
    nc = matrix.nc
    shown = [c for c in range(nc) if counts[c].sum() or counts[:, c].sum()] + [nc]
    values = (matrix.normalized() if normalized else counts)[np.ix_(shown, shown)]
    labels = [names[c] if c < nc else "background" for c in shown]
    fig = _figure(MATRIX_PX)
    ax = fig.add_subplot()
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=1 if normalized else max(1, values.max()))
    fig.colorbar(image, ax=ax, shrink=0.8)
    ticks = range(len(shown))
    size = tick_font_size(len(shown))
    ax.set_xticks(ticks, labels, rotation=90, fontsize=size)
    ax.set_yticks(ticks, labels, fontsize=size)
    if len(shown) <= 31:
        top = values.max() if values.size else 0
        for (i, j), v in np.ndenumerate(values):
            if v:
                ax.text(j, i, f"{v:.2f}" if normalized else str(int(v)), ha="center", va="center", fontsize=7,
                        color="white" if v > 0.5 * top else "black")  # fmt: skip
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    what = "normalised by true class" if normalized else "counts"
    ax.set_title(f"confusion matrix ({what}; conf >= {matrix.conf:g}, IoU >= {matrix.iou:g})")
    return _save(fig, path)
