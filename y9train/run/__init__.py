"""The entry of a training run: ``train(...)`` (behind ``y9 train``), its command line, several processes.

- ``train``: ``train(...)`` and ``python -m y9train.run.train``; one device runs ``loop.trainer.Trainer``;
- ``args``: the command line of ``python -m y9train.run.train`` (what torchrun starts);
- ``launch``: ``y9 train --devices 0,1``, one process per device through torchrun;
- ``distributed``: ``DistributedHooks``, DistributedDataParallel plugged into the trainer's seams.

Arrows: ``train`` -> ``args``, ``distributed``; the top room of y9train: it stands on ``loop``, ``optimisation``,
``setup`` and ``data``; nothing of y9train imports it.
"""
