"""Helpers of tests/train/test_trainer*.py: tiny runs (gelan-t, 160 px, one thread) on the two COCO images kept in
tests/data (no ../shared needed) or on ../shared datasets.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tests.train.data_fixtures import coco_pair_dataset
from y9train.optimisation.hyp import Hyp, TrainConfig

#: columns of a training record that hold wall-clock times (they differ between identical runs)
TIMING_KEYS = {"time_s", "img_s", "val_s"}


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: on a shared 2-core box, two OpenMP threads per process make conv steps 10x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def coco_pair(tmp_path: Path) -> Path:
    """data.yaml of 3 train images (2 labelled COCO images + a background copy) and 1 val image, nc=80."""
    return coco_pair_dataset(tmp_path / "data")


def tiny_config(
    data: Path, tmp_path: Path, *, name: str = "run", hyp: dict | None = None, **options
) -> TrainConfig:
    """gelan-t, 64 px, batch 2, one epoch, no workers, quiet, no pictures (``plots=False``: the tests of the
    pictures ask for them); short warmup; ``hyp`` updates ``Hyp`` fields."""
    base = {"nbs": 2, "warmup_min_iters": 2}
    base.update(hyp or {})
    kwargs = {
        "data": str(data),
        "model": "gelan-t",
        "imgsz": 64,
        "epochs": 1,
        "batch": 2,
        "workers": 0,
        "project": str(tmp_path / "runs"),
        "name": name,
        "verbose": False,
        "plots": False,
    }
    kwargs.update(options)
    return TrainConfig(hyp=Hyp(**base), **kwargs)


def without_timing(history: list[dict]) -> list[dict]:
    """Records without wall-clock columns, nan as None (so that equal records compare equal)."""
    return [
        {
            k: None if isinstance(v, float) and math.isnan(v) else v
            for k, v in row.items()
            if k not in TIMING_KEYS
        }
        for row in history
    ]
