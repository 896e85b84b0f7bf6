"""One seed per source of randomness (``y9train.setup.seeds``): ``init_seed`` moves only the initial weights,
``order_seed`` only the order of the training images, ``augment_seed`` only the samples' augmentation draws, and
``seed`` all three; with none of them set a run is what it was before they existed (each source on ``seed``)."""

from __future__ import annotations

import torch

from tests.conftest import TEST_DATA
from tests.train.trainer_fixtures import one_thread, tiny_config  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.optimisation.hyp import TrainConfig
from y9train.setup.seeds import RunSeeds


def _set_up(tmp_path, name: str, **seeds) -> Trainer:
    cfg = tiny_config(TEST_DATA / "coco8.yaml", tmp_path, name=name, imgsz=64, save=False, val=False, **seeds)
    trainer = Trainer(cfg)
    trainer.setup()
    trainer.algorithms_found.apply()  # setup's kernel choice is process-wide; fit would put it back
    return trainer


def _weights(trainer: Trainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])


def _order(trainer: Trainer) -> list[int]:
    """The training images' indices in the order of epoch 1's batches."""
    return [key.index for batch in trainer.train_loader.batch_sampler for key in batch]


def _first_batch(trainer: Trainer) -> torch.Tensor:
    return next(iter(trainer.train_loader))["img"]


def test_the_seeds_of_a_config():
    assert RunSeeds.of(TrainConfig(seed=3)) == RunSeeds(init=3, order=3, augment=3)
    assert RunSeeds.of(TrainConfig(seed=3, augment_seed=5)) == RunSeeds(init=3, order=3, augment=5)
    cfg = TrainConfig.from_dict({"seed": 1, "init_seed": "0", "order_seed": None})  # as a checkpoint or CLI gives it
    assert RunSeeds.of(cfg) == RunSeeds(init=0, order=1, augment=1)


def test_each_seed_moves_only_its_source(tmp_path, one_thread):  # noqa: F811
    base = _set_up(tmp_path, "base", seed=0)
    weights, order, batch = _weights(base), _order(base), _first_batch(base)
    assert len(order) == 8

    def differs(**seeds) -> tuple[bool, bool, bool]:
        other = _set_up(tmp_path, "-".join(f"{k}{v}" for k, v in seeds.items()), **seeds)
        return (not torch.equal(_weights(other), weights), _order(other) != order,
                not torch.equal(_first_batch(other), batch))  # fmt: skip

    assert differs(seed=0, init_seed=0) == (False, False, False)  # a source's seed equal to seed: nothing moves
    assert differs(seed=0, init_seed=1) == (True, False, False)
    assert differs(seed=0, order_seed=1) == (False, True, True)  # other images in the first batch
    assert differs(seed=0, augment_seed=1) == (False, False, True)
    assert differs(seed=1, init_seed=0, order_seed=0, augment_seed=0) == (False, False, False)
    assert differs(seed=1) == (True, True, True)
