"""Tiled (sliced) inference for large frames (drone / aerial imagery): small objects stay visible.

    dets = predict_tiled(detector, frame_4k, tile=640, overlap=0.2)

- ``grid``: ``tile_grid``, the overlapping tiles that cover a frame;
- ``merge``: ``merge_detections``, the tiles' detections shifted back to frame pixels and merged (``"nms"`` or
  ``"nmm"``, non-maximum merging);
- ``sliced``: ``predict_tiled`` (and ``TileOptions``), the crops through the Detector as one list, then merged;
- ``recall``: recall at an IoU threshold, the measure of the tiling benchmarks and tests.

It works on ``Detections`` and a Detector given to it; it imports nothing else of ``y9deploy.pipelines``.
"""

from y9deploy.pipelines.tiling.grid import tile_grid
from y9deploy.pipelines.tiling.merge import MERGES, greedy_nmm, merge_detections
from y9deploy.pipelines.tiling.sliced import TileOptions, predict_tiled, predict_tiled_with

__all__ = ["MERGES", "TileOptions", "greedy_nmm", "merge_detections", "predict_tiled", "predict_tiled_with", "tile_grid"]
