"""Where a training run's time goes.

- ``run_timing``: every second from the process's start to its end (``timing.json``);
- ``startup``: the start by part (``startup.json``) and the imports started in a thread;
- ``step_timer``: per-step phases for profiling (``TrainConfig.profile``).

Arrows: ``run_timing`` -> ``startup``. Imports nothing else of y9train.
"""
