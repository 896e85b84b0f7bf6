"""Moved to ``y9deploy.tracking`` (below the runtime, which tracks in ``Detector.track``);
importing this path warns (DeprecationWarning) and gives that package."""

from y9deploy.pipelines.moved import stand_in

stand_in(__name__)
