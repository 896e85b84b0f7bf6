"""Moved to ``y9deploy.pipelines.predict.results``;
importing this path warns (DeprecationWarning) and gives that module."""

from y9deploy.pipelines.moved import stand_in

stand_in(__name__)
