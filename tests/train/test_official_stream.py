"""benchmarks/official_stream.py: train_dual.py's training batches handed to y9's trainer. The official's own loader
needs its source (not in ../shared), so these tests feed the adapter batches in the official's format
(``utils/dataloaders.LoadImagesAndLabels.collate_fn``: images, targets ``(image, class, cx, cy, w, h)`` normalised,
paths, shapes) and check what y9 receives against the batch contract of ``y9train.data.loader``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from y9train.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
spec = importlib.util.spec_from_file_location("official_stream", ROOT / "benchmarks" / "official_stream.py")
stream = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stream)


def _official_batch(h: int, w: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    imgs = torch.randint(0, 256, (2, 3, h, w), dtype=torch.uint8, generator=g)
    targets = torch.tensor(
        [[0, 3, 0.50, 0.25, 0.20, 0.10], [1, 0, 0.10, 0.90, 0.05, 0.20], [1, 5, 0.75, 0.40, 0.50, 0.80]]
    )
    return imgs, targets, ("/d/images/a.jpg", "/d/images/b.jpg"), (None, None)


def test_official_batches_become_y9_batches_in_pixels():
    batches = [_official_batch(320, 480, 0), _official_batch(320, 480, 1)]
    lines = []
    out = list(stream.OfficialBatches(batches, digests=1, report=lines.append))
    assert len(out) == 2 and len(lines) == 1 and lines[0].startswith("official stream, epoch 1 batch 0: ")
    for (imgs, targets, paths, _), b in zip(batches, out):
        assert b["img"] is imgs and b["paths"] == list(paths)  # the official's RGB uint8 images as they come
        # the contract: (batch_index, class, x1, y1, x2, y2) in pixels of img (w 480, h 320)
        for t, row in zip(targets.tolist(), b["labels"].tolist()):
            i, c, cx, cy, w, h = t
            expected = [i, c, (cx - w / 2) * 480, (cy - h / 2) * 320, (cx + w / 2) * 480, (cy + h / 2) * 320]
            assert row == pytest.approx(expected, abs=1e-4)
    assert list(stream.OfficialBatches(batches, digests=1, report=lines.append))  # a second pass: epoch 2
    assert len(lines) == 2  # digests of the first epoch only, for each adapter


def test_mosaic_goes_off_at_the_epoch_train_dual_closes_it():
    hooks = stream.OfficialStreamHooks("/nonexistent", "d.yaml", Path("/tmp"), report=lambda s: None)
    callbacks = {}
    trainer = SimpleNamespace(
        config=SimpleNamespace(epochs=40, hyp=SimpleNamespace(close_mosaic=10)),
        add_callback=lambda event, fn: callbacks.setdefault(event, []).append(fn),
    )
    hooks.attach(trainer)
    hooks.official_dataset = SimpleNamespace(mosaic=True)
    for epoch in range(40):
        trainer.epoch = epoch
        for fn in callbacks["on_epoch_start"]:
            fn(trainer)
        assert hooks.official_dataset.mosaic is (epoch < 30)  # train_dual.py: epoch == epochs - close_mosaic


def test_a_trainer_attaches_the_hooks(tmp_path):
    from y9train.hyp import TrainConfig

    hooks = stream.OfficialStreamHooks("/nonexistent", "d.yaml", tmp_path)
    trainer = Trainer(TrainConfig(data="d.yaml"), hooks=hooks)
    assert hooks.close_mosaic == trainer.config.hyp.close_mosaic > 0  # the run's own close_mosaic
    assert len(trainer.callbacks["on_epoch_start"]) == 1
