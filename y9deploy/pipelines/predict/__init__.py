"""Prediction runs, the top of ``y9deploy.pipelines``: a Detector over images, folders, videos, streams and cameras,
with results written as it goes (``y9 predict``, ``y9.Model.predict(..., save_dir=...)``).

- ``run``: ``predict_source``, one run over a source; ``collect_sources`` and ``check_save_dir``;
- ``session``: ``PredictSession``, the per-image and per-video loops of one run;
- ``summary``: ``PredictSummary``, what a run did, and its exit code;
- ``results``: ``ResultsWriter``, JSON lines and CSV rows flushed per frame, and ``read_jsonl``;
- ``files``: the optional label files, crops and COCO rows (``SaveOptions``);
- ``class_options``: classes and per-class thresholds given by name or id.

Arrows: ``run`` -> ``session`` -> ``results``, ``files``, ``summary``; both stand on ``sources``, ``tiling`` and
(with ``track``) ``y9deploy.tracking``; they open a Detector (``y9deploy.runtime``) from a path.
"""

from y9deploy.pipelines.predict.run import predict_source
from y9deploy.pipelines.predict.summary import PredictSummary

__all__ = ["PredictSummary", "predict_source"]
