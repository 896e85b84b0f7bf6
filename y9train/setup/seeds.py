"""The seeds of a run, one per source of randomness, so that a study of the seed-to-seed spread can hold one source
fixed while another varies (docs/training.md, "Steadiness levers").

- ``init``: torch's generator when the model is built (the initial weights and the head's biases);
- ``order``: the order of the training images each epoch and the multi-scale sizes (``YoloBatchSampler``);
- ``augment``: every sample's draws (mosaic partners, affine, HSV, flips, mixup), from ``(seed, epoch, index)``
  (``YoloDataset``), and the loader workers' base seeds.

``TrainConfig.seed`` sets all three; ``init_seed``, ``order_seed`` and ``augment_seed`` (None: ``seed``) set one.
What no seed holds: the order in which a GPU adds floating-point numbers, unless ``deterministic``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunSeeds:
    init: int
    order: int
    augment: int

    @classmethod
    def of(cls, config) -> RunSeeds:
        """The seeds of ``config`` (a ``TrainConfig``): each source's own seed where set, else ``config.seed``."""

        def pick(value: int | None) -> int:
            return int(config.seed) if value is None else int(value)

        return cls(init=pick(config.init_seed), order=pick(config.order_seed), augment=pick(config.augment_seed))
