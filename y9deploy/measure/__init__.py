"""Measuring a deployment: benchmarks and the environment.

- ``bench``: ``benchmark(...)`` (``y9deploy.benchmark``), latency and throughput of a Detector by stage;
- ``bench_result``: how it reports (``BenchmarkResult``); ``stage_timer``: host clocks or CUDA events per stage;
- ``doctor``: what is installed, which GPU, what runs here; ``doctor_verdicts``: its per-backend verdicts.

Arrows: ``bench`` -> ``bench_result``, ``stage_timer``, ``doctor`` -> ``doctor_verdicts``; it stands on
``y9deploy.runtime`` and ``y9deploy.engine``; nothing of y9deploy but its package's lazy names imports it.
"""
