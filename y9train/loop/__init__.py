"""The training loop and what it keeps between epochs.

- ``trainer``: ``Trainer`` (``setup`` then ``fit``: the epochs, validation, checkpoints);
- ``trainer_setup``: the setup half of ``Trainer``, step by step; ``epoch_batches``: each epoch's loader iterator;
- ``state``: what ``last.pt`` stores for an exact resume; ``result``: ``TrainResult``, what ``fit`` returns;
- ``end``: what ``fit`` does after its last epoch; ``divergence``: stop a run whose weights went non-finite;
- ``hooks``: ``TrainHooks``, the seams a distributed run plugs into.

Arrows: ``trainer`` -> ``trainer_setup`` -> ``epoch_batches``; ``trainer`` -> ``state``, ``result``, ``end``,
``divergence``, ``hooks``. It stands on ``reports``, ``optimisation``, ``setup``, ``timing``, ``checkpoints``,
``data``; only ``run`` imports it.
"""
