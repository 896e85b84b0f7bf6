"""Where a training run's time goes."""
