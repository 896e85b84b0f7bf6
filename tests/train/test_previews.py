"""Training previews (issue 35 item 3): the first batches drawn with their boxes, and the labels picture; drawn in a
background thread, never failing the run."""

from __future__ import annotations

import sys

import cv2
import numpy as np
import pytest
import torch

from y9core.images.palette import class_color
from y9train.reports.previews import BATCHES, LABELS_PX, TrainingPreviews, batch_grid, plot_labels

NAMES = ["cat", "dog", "bird"]


def synthetic_batch(n: int = 4, h: int = 64, w: int = 96) -> dict:
    """n flat-coloured RGB images (image i has red channel 40 * i), one box each of class i % 3."""
    img = np.zeros((n, 3, h, w), np.uint8)
    img[:, 0] = (40 * np.arange(n))[:, None, None]
    img[:, 2] = 200
    labels = np.array([[i, i % 3, 10, 12, 50, 40] for i in range(n)], np.float32)
    return {"img": torch.from_numpy(img), "labels": torch.from_numpy(labels)}


def test_batch_grid_places_each_image_with_its_boxes():
    b = synthetic_batch()
    grid = batch_grid(b["img"].numpy(), b["labels"].numpy(), NAMES)
    assert grid.shape == (2 * 64, 2 * 96, 3)  # 4 images: 2 x 2 tiles at full size
    for i in range(4):
        r, k = divmod(i, 2)
        assert tuple(grid[r * 64 + 55, k * 96 + 80]) == (200, 0, 40 * i)  # BGR of image i, away from its box
        assert tuple(grid[r * 64 + 30, k * 96 + 10]) == class_color(i % 3)  # the box's left edge, its class colour
    big = synthetic_batch(16, 640, 640)
    assert max(batch_grid(big["img"].numpy(), big["labels"].numpy(), NAMES).shape[:2]) <= 1920  # scaled down


def test_labels_picture(tmp_path):
    pytest.importorskip("matplotlib")
    labels = [np.array([[0, 0.5, 0.5, 0.2, 0.3], [2, 0.1, 0.9, 0.05, 0.05]]), np.zeros((0, 5))]
    path = plot_labels(labels, NAMES, tmp_path / "labels.jpg")
    img = cv2.imread(str(path))
    assert img.shape == (LABELS_PX[1], LABELS_PX[0], 3) and img.std() > 5


def test_previews_draw_the_first_batches_in_the_background(tmp_path, monkeypatch):
    previews = TrainingPreviews(tmp_path, NAMES)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # labels.jpg fails: a warning, not an error
    previews.labels([np.zeros((0, 5))])
    for i in range(BATCHES + 2):
        previews.offer(i, synthetic_batch())
    warnings: list[str] = []
    written = previews.close(warnings.append)
    assert sorted(p.name for p in written) == [f"train_batch{i}.jpg" for i in range(BATCHES)]
    assert warnings == ["no labels.jpg: matplotlib is not installed"]
    assert cv2.imread(str(tmp_path / "train_batch0.jpg")).shape == (128, 192, 3)
    off = TrainingPreviews(None, NAMES)  # a resumed run, another process of a distributed run
    off.offer(0, synthetic_batch())
    assert off.close() == []


def _strong_blue(img: np.ndarray) -> int:
    """Pixels of the centre and size panels (the right two thirds) drawn in a clearly visible blue."""
    right = img[:, img.shape[1] // 3 :].astype(int)
    return int(((right[..., 0] - right[..., 2]) > 80).sum())


@pytest.mark.parametrize("n_boxes", [12, 6000])
def test_labels_picture_shows_every_box_on_small_and_large_data(tmp_path, n_boxes):
    """issue 44 item 8: 12 boxes are 12 visible dots per panel (a 2-D histogram drew each in near-white)."""
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    rows = np.c_[rng.integers(0, 3, n_boxes), rng.uniform(0.1, 0.9, (n_boxes, 2)), rng.uniform(0.02, 0.4, (n_boxes, 2))]
    img = cv2.imread(str(plot_labels([rows], NAMES, tmp_path / "labels.jpg")))
    assert _strong_blue(img) >= 12 * 2 * 8  # at least ~8 visible pixels per box in each panel
