"""The next epoch's batches are started before an epoch validates (``y9train.loop.epoch_batches``, issue 48): the
workers build them meanwhile, and they are the very batches a fresh iteration of that epoch gives."""

from __future__ import annotations

import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.data import YoloDataset, build_dataloader
from y9train.loop.epoch_batches import EpochBatches
from y9train.loop.trainer import Trainer
from y9train.optimisation.hyp import TrainConfig


def test_the_next_epoch_is_started_before_the_epoch_validates(tmp_path):
    data = coco_pair(tmp_path)  # 3 train images, batch 1: three batches an epoch, two persistent workers
    # save=False: no run folder or checkpoints (the prefetch does not depend on them; this test reads none)
    trainer = Trainer(tiny_config(data, tmp_path, epochs=3, batch=1, workers=2, save=False))
    seen = []  # at each epoch's end (after its validation): the epoch started ahead, the dataset's epoch

    def watch(t):
        started = t.epoch_batches.started
        seen.append((t.epoch, started[0] if started else None, t.train_ds.epoch))

    trainer.add_callback("on_epoch_end", watch)
    trainer.fit()
    # epochs 1 and 2 validated with the next epoch's iteration already started (its keys set); the last started none
    assert seen == [(0, 1, 1), (1, 2, 2), (2, None, 2)]


def _epochs(batches: EpochBatches, prefetch: bool, epochs: int) -> list[torch.Tensor]:
    out = []
    for epoch in range(epochs):
        it = batches.of(epoch)
        out += [b["img"].clone() for _, b in zip(range(len(batches.loader)), it, strict=False)]
        if prefetch:
            batches.prefetch(epoch + 1)
    return out


def test_prefetched_epochs_give_the_same_batches_as_fresh_ones(tmp_path):
    data = coco_pair(tmp_path)
    runs = []
    for prefetch in (False, True):
        ds = YoloDataset.from_yaml(data, "train", imgsz=160, label_cache=False)
        loader = build_dataloader(ds, 2, workers=2)
        config = TrainConfig(data=str(data), epochs=3, hyp={"close_mosaic": 1})  # the mosaic closes for epoch 3
        lines: list[str] = []
        runs.append(_epochs(EpochBatches(loader, config, lines.append), prefetch, 3))
        assert lines == ["mosaic off from epoch 3 (close_mosaic=1)"] and not ds.mosaic
    assert len(runs[0]) == len(runs[1]) == 6
    for a, b in zip(*runs, strict=True):
        assert torch.equal(a, b)
