"""Pictures of what the network is fed, written once at the start of a run into its folder:

- ``train_batch0.jpg``, ``train_batch1.jpg``, ``train_batch2.jpg``: the first batches as the network gets them
  (after mosaic and the other augmentations), up to 16 images in a grid, each box in its class colour with the
  class name (``y9core.images.palette``): where broken labels, wrong class ids or a bad augmentation show first.
- ``labels.jpg``: the training labels: boxes per class, where box centres fall and how large boxes are (both as a
  fraction of the image).

Cheap for the run: the batches handed over are the loader's own tensors (the training step never writes into
them), and one background thread draws and writes the files while training goes on; ``close`` waits for it. A
failure (a missing matplotlib for labels.jpg, a full disk) is one warning at ``close``, never an error of the run.
"""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from y9core.images.palette import draw_box, line_width

BATCHES = 3  # train_batch0.jpg ... train_batch2.jpg
MAX_IMAGES = 16  # per batch picture
MAX_SIDE = 1920  # a batch picture's longest side, pixels
LABELS_PX = (1500, 450)  # labels.jpg (width, height)
SCATTER_MAX = 5000  # labels.jpg draws box centres and sizes as dots up to this many boxes, as a histogram beyond


def batch_grid(images: np.ndarray, labels: np.ndarray, names: list[str], *, max_images: int = MAX_IMAGES) -> np.ndarray:
    """A grid of a batch's first images with their boxes.

    Args:
        images (ndarray[B, 3, H, W] uint8 RGB): the batch images. labels (ndarray[N, 6]): rows
            ``(image index, class, x1, y1, x2, y2)`` in pixels of those images. names: class names by id.
    Returns:
        ndarray[rows * h, cols * w, 3] uint8 BGR, tiles scaled so that the longest side is at most ``MAX_SIDE``.
    """
    n = min(len(images), max_images)
    _, _, h, w = images.shape
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    scale = min(1.0, MAX_SIDE / (max(cols * w, rows * h)))
    th, tw = max(1, round(h * scale)), max(1, round(w * scale))
    grid = np.full((rows * th, cols * tw, 3), 114, np.uint8)
    thickness = line_width((th, tw))
    for i in range(n):
        tile = np.ascontiguousarray(images[i].transpose(1, 2, 0)[:, :, ::-1])  # RGB CHW -> BGR HWC
        tile = cv2.resize(tile, (tw, th), interpolation=cv2.INTER_AREA) if scale < 1 else tile.copy()
        for _, cls, *box in labels[labels[:, 0] == i]:
            c = int(cls)
            name = names[c] if 0 <= c < len(names) else str(c)
            draw_box(tile, np.asarray(box) * scale, c, name, thickness=thickness, font_scale=thickness / 3)
        r, k = divmod(i, cols)
        grid[r * th : (r + 1) * th, k * tw : (k + 1) * tw] = tile
        cv2.rectangle(grid, (k * tw, r * th), ((k + 1) * tw - 1, (r + 1) * th - 1), (255, 255, 255), 1)
    return grid


def plot_labels(labels: list[np.ndarray], names: list[str], path: str | Path) -> Path:
    """``labels.jpg`` from the training labels (one ndarray[n, 5] ``(class, cx, cy, w, h)`` normalised per image).

    Raises:
        ImportError: matplotlib is not installed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    rows = np.concatenate([np.asarray(lb, np.float64).reshape(-1, 5) for lb in labels]) if labels else np.zeros((0, 5))
    counts = np.bincount(rows[:, 0].astype(int), minlength=len(names))
    fig = Figure(figsize=(LABELS_PX[0] / 100, LABELS_PX[1] / 100), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 3, 1)
    ax.bar(range(len(counts)), counts, color=[np.array(_rgb(c)) for c in range(len(counts))])
    ax.set_title(f"boxes per class ({len(rows)} boxes, {len(labels)} images)")
    if len(counts) <= 30:
        ax.set_xticks(range(len(counts)), [names[c] if c < len(names) else str(c) for c in range(len(counts))],
                      rotation=90, fontsize=8)  # fmt: skip
    else:
        ax.set_xlabel("class id")
    for j, (cols, title, xlabel, ylabel) in enumerate(((slice(1, 3), "box centres", "x", "y"),
                                                      (slice(3, 5), "box sizes", "width", "height"))):  # fmt: skip
        ax = fig.add_subplot(1, 3, j + 2)
        xy = rows[:, cols]
        if len(xy) <= SCATTER_MAX:  # few boxes: each one a visible dot (a 2-D histogram draws 1 in near-white)
            ax.scatter(xy[:, 0], xy[:, 1], s=20, color="#08519c", alpha=0.8, linewidths=0)
        else:
            ax.hist2d(xy[:, 0], xy[:, 1], bins=50, range=[[0, 1], [0, 1]], cmap="Blues", cmin=1,
                      norm=LogNorm(vmin=0.3))  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(1, 0) if j == 0 else ax.set_ylim(0, 1)  # centres: image orientation (y down)
        ax.set_title(f"{title} (fraction of the image)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_aspect("equal")
    buf = _png_to_jpg(fig)
    return _write(path, buf)


def _rgb(class_id: int) -> tuple[float, float, float]:
    from y9core.images.palette import class_color

    b, g, r = class_color(class_id)
    return r / 255, g / 255, b / 255


def _png_to_jpg(fig: Any) -> bytes:
    import io

    raw = io.BytesIO()
    fig.savefig(raw, format="png")
    img = cv2.imdecode(np.frombuffer(raw.getvalue(), np.uint8), cv2.IMREAD_COLOR)
    ok, jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 92])
    if not ok:
        raise OSError("could not encode labels.jpg")
    return jpg.tobytes()


def _write(path: str | Path, data: bytes) -> Path:
    from y9core.files.atomic_write import atomic_write

    return atomic_write(path, data)


def write_batch(images: Any, labels: Any, names: list[str], path: str | Path) -> Path:
    """``train_batchK.jpg`` of one loader batch (``img`` uint8 RGB CHW, ``labels`` rows as ``batch_grid``)."""
    grid = batch_grid(np.asarray(images), np.asarray(labels, np.float64).reshape(-1, 6), names)
    ok, jpg = cv2.imencode(".jpg", grid, [cv2.IMWRITE_JPEG_QUALITY, 90])
    if not ok:
        raise OSError(f"could not encode {path}")
    return _write(path, jpg.tobytes())


class TrainingPreviews:
    """The previews of one run (module docstring); ``save_dir`` None: nothing is drawn (resumed runs, other
    processes of a distributed run, runs that save nothing)."""

    def __init__(self, save_dir: Path | None, names: list[str], *, batches: int = BATCHES) -> None:
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.names = list(names)
        self.batches = batches
        self.jobs: list[tuple[str, Future]] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="y9-previews") if save_dir else None

    def labels(self, labels: list[np.ndarray]) -> None:
        """Draw labels.jpg from the training labels (normalised ``(class, cx, cy, w, h)`` per image)."""
        if self._pool is not None:
            self.jobs.append(("labels.jpg", self._pool.submit(plot_labels, labels, self.names,
                                                              self.save_dir / "labels.jpg")))  # fmt: skip

    def offer(self, iteration: int, batch: dict) -> None:
        """Hand over the run's batch number ``iteration`` (0-based); the first ``batches`` are drawn."""
        if self._pool is not None and iteration < self.batches:
            name = f"train_batch{iteration}.jpg"
            self.jobs.append((name, self._pool.submit(write_batch, batch["img"].numpy(), batch["labels"].numpy(),
                                                      self.names, self.save_dir / name)))  # fmt: skip

    def close(self, warn: Any = None) -> list[Path]:
        """Wait for the pictures; returns those written. Failures go to ``warn(message)`` (one per picture)."""
        if self._pool is None:
            return []
        written = []
        for name, job in self.jobs:
            try:
                written.append(job.result())
            except ImportError as exc:
                if warn is not None:
                    warn(f"no {name}: {exc.name or 'matplotlib'} is not installed")
            except (OSError, ValueError) as exc:
                if warn is not None:
                    warn(f"no {name}: {exc}")
        self._pool.shutdown()
        self._pool = None
        return written
