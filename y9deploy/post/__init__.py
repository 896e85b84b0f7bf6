"""The Detector's post-processing: backend outputs -> rows -> Detections.

- ``runner``: ``PostRunner``, the pipelines' post-processing by the implementation ``y9core.post.choice``
  picks (the only caller of the implementations below and of ``y9core.post.rows``'s);
- ``graph``: the batched decode + NMS replayed as CUDA graphs, with typed per-shape state;
- ``host``: rows -> Detections in frame pixels, and the rows of an end-to-end model;
- ``options``: ``PredictOptions`` (conf, iou, max_det, classes, agnostic), validated once, overridable per call:
  read by the runner, the Detector and the backends that run an end-to-end NMS.

The decode + NMS implementations shared with training's validation are in ``y9core.post``. Importing this
package needs numpy only: torch and triton are imported by what needs them.
"""
