"""What a training or validation run decides before its first step.

- ``device_model``: device, AMP mode, the model (by name or from a checkpoint) and its loss;
- ``data``: the train and val datasets and their loaders; ``seeds``: one seed per source of randomness;
- ``determinism``: fastest kernels or reproducible to the bit.

Arrows: ``data`` -> ``seeds``. It stands on ``checkpoints``, ``loss``, ``models``, ``data``, ``timing``; ``loop``,
``reports`` (validation) and ``run`` (distributed) import it.
"""
