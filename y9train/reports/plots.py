"""``results.csv`` -> ``results.png``: one small panel per loss term and metric, against the epoch.

matplotlib is imported inside ``plot_results`` and drawn through its Agg canvas (no GUI backend, no global
pyplot state); an ImportError reaches the caller, which may skip plotting on machines without matplotlib.
"""

from __future__ import annotations

from pathlib import Path

from y9train.reports.reporting import read_csv

PANELS = (
    ("train/box", "box loss"),
    ("train/cls", "class loss"),
    ("train/dfl", "DFL loss"),
    ("train/grad_norm", "grad norm (pre-clip)"),
    ("lr", "learning rate"),
    ("metrics/precision", "precision"),
    ("metrics/recall", "recall"),
    ("metrics/map50", "mAP50"),
    ("metrics/map50_95", "mAP50-95"),
    ("fitness", "fitness"),
)


def plot_results(csv_path: str | Path, png_path: str | Path | None = None, *, dpi: int = 100):
    """Draw the columns of ``csv_path`` present in ``PANELS``; write ``png_path`` (default beside the CSV).

    Returns the matplotlib ``Figure`` (its axes hold the plotted series, in ``PANELS`` order).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    csv_path = Path(csv_path)
    rows = read_csv(csv_path)
    if not rows:
        raise ValueError(f"{csv_path} holds no rows; expected at least one finished epoch.")
    for r in rows:
        if "fitness" not in r and "metrics/fitness" in r:
            r["fitness"] = r["metrics/fitness"]
    panels = [(k, title) for k, title in PANELS if k in rows[0]]
    cols = 5
    nrows = (len(panels) + cols - 1) // cols
    width, height = 3.2 * cols, 2.6 * nrows
    fig = Figure(figsize=(width, height), dpi=dpi)  # margins set below: "tight" layout doubled the drawing time
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.45 / width, right=1 - 0.15 / width, bottom=0.5 / height, top=1 - 0.35 / height,
                        wspace=0.3, hspace=0.6)  # fmt: skip
    epochs = [r["epoch"] for r in rows]
    for j, (key, title) in enumerate(panels):
        ax = fig.add_subplot(nrows, cols, j + 1)
        ax.plot(epochs, [r[key] for r in rows], marker="o", markersize=3, linewidth=1.5, label=key)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epoch", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    png_path = Path(png_path) if png_path is not None else csv_path.with_suffix(".png")
    fig.savefig(png_path)
    return fig


def plot_run(save_dir: Path | None, has_history: bool, reporter) -> None:
    """results.png from a run's results.csv; optional, so it never hides the error that ended a run (a missing
    matplotlib or an unwritable folder is reported through ``reporter``, not raised)."""
    csv_path = save_dir / "results.csv" if save_dir is not None else None
    if csv_path is None or not has_history or not csv_path.is_file():
        return
    try:
        plot_results(csv_path, save_dir / "results.png")
    except ImportError as exc:
        reporter.info(f"no plots: {exc.name or 'matplotlib'} is not installed")
    except OSError as exc:
        reporter.warn(f"no plots: {exc}")
