"""Moved to ``y9deploy.pipelines.predict.run``;
importing this path warns (DeprecationWarning) and gives that module."""

from y9deploy.pipelines.moved import stand_in

stand_in(__name__)
