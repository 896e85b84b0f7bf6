"""The files a model is kept in: y9's own checkpoints and official YOLOv9 ones (read without running their code).

- ``load``: ``load_checkpoint(path)``, any checkpoint -> a model (DESIGN.md's ``y9train.checkpoint.load_checkpoint``);
- ``facts``: the model facts training writes into a checkpoint, and reads back;
- ``integrity``: zip CRCs, the sha256 over the tensors, finite weights;
- ``official``: official checkpoints and bare state dicts; ``official_pickle``: their restricted unpickler;
- ``writer``: ``CheckpointWriter``, an epoch's files written in a background thread;
- ``reparam_file``: ``y9 reparam IN OUT``, a checkpoint -> ``y9train.reparam.to_deploy`` -> a y9 checkpoint.

Arrows: ``load`` -> ``facts``, ``integrity``, ``official`` -> ``official_pickle``; ``reparam_file`` -> ``load``.
Below it: ``y9train.models`` and ``y9train.reparam``; above it: ``setup``, ``reports``, ``loop``.
"""
