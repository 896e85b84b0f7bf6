"""What changes the weights, and the settings that say how.

- ``hyp``: ``Hyp`` (hyperparameters from a YAML file of ``y9train/configs``) and ``TrainConfig`` (run options);
- ``optim``: the optimiser, learning-rate schedules and warmup; ``ema``: the moving average of the weights;
- ``weight_average``: the mean of the last epochs' EMA weights; ``graphed_network``: forward and backward as CUDA
  graphs.

Arrows: ``optim`` -> ``hyp`` -> ``y9train.data.augment``, ``y9train.value_ranges``.
"""
