"""The next epoch's batches are started before an epoch validates (``y9train.epoch_batches``, issue 48): the
workers build them meanwhile, and they are the very batches a fresh iteration of that epoch gives."""

from __future__ import annotations

import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.data import YoloDataset, build_dataloader
from y9train.epoch_batches import EpochBatches
from y9train.hyp import TrainConfig
from y9train.trainer import Trainer


class Watching(Trainer):
    """Records, at each validation, how far the training loader's iterator has gone: (indices sent, batches taken)."""

    def _validate(self):
        it = self.train_loader._iterator
        self.seen.append((it._send_idx, it._rcvd_idx))
        return super()._validate()


def test_the_next_epoch_is_started_before_the_epoch_validates(tmp_path):
    data = coco_pair(tmp_path)  # 3 train images, batch 1: three batches an epoch, two persistent workers
    trainer = Watching(tiny_config(data, tmp_path, epochs=3, batch=1, workers=2))
    trainer.seen = []
    trainer.fit()
    # epochs 1 and 2 validate with the next epoch's first batches asked of the workers and none taken yet; the
    # last epoch starts nothing (the iterator is its own, all three batches taken)
    assert trainer.seen[:2] == [(3, 0), (3, 0)]  # prefetch_factor 2 x 2 workers, capped by the epoch's 3 batches
    assert trainer.seen[2] == (3, 3)


def _epochs(ds, loader, batches: EpochBatches, prefetch: bool, epochs: int) -> list[torch.Tensor]:
    out = []
    for epoch in range(epochs):
        it = batches.of(epoch)
        out += [b["img"].clone() for _, b in zip(range(len(loader)), it, strict=False)]
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
        runs.append(_epochs(ds, loader, EpochBatches(loader, ds, config, lines.append), prefetch, 3))
        assert lines == ["mosaic off from epoch 3 (close_mosaic=1)"] and not ds.mosaic
    assert len(runs[0]) == len(runs[1]) == 6
    for a, b in zip(*runs, strict=True):
        assert torch.equal(a, b)
