"""The modules of the former flat ``y9deploy.pipelines`` that moved into sub-packages, and the stand-in that keeps
their old import paths working: ``from y9deploy.pipelines.video import FrameReader`` warns (DeprecationWarning,
pointing at the importing line) and gives the very module ``y9deploy.pipelines.sources.frame_reader`` (the same
objects, so patching one patches the other). Old paths whose name is now a sub-package (``sources``,
``inspection``, ``tiling``) re-export their public names from the sub-package instead, without a warning.
"""

from __future__ import annotations

import importlib
import sys
import warnings

#: old module name (under y9deploy.pipelines) -> where it lives now
MOVED = {
    "video": "y9deploy.pipelines.sources.frame_reader",
    "tracking": "y9deploy.tracking",  # below the runtime: Detector.track uses it
    "counting": "y9deploy.tracking.counting",
    "track_run": "y9deploy.tracking.source_tracking",
    "inspection_rules": "y9deploy.pipelines.inspection.rules_file",
    "inspection_run": "y9deploy.pipelines.inspection.run",
    "results_writer": "y9deploy.pipelines.predict.results",
    "batch_predict": "y9deploy.pipelines.predict.run",
}


def stand_in(old: str) -> None:
    """Called by the module ``old`` (``y9deploy.pipelines.<name>``) as it is imported: warn, and put the module it
    moved to in its place in ``sys.modules``."""
    new = MOVED[old.rsplit(".", 1)[-1]]
    warnings.warn(f"{old} moved to {new}; import it from there ({old} will be removed).", DeprecationWarning,
                  stacklevel=3)  # fmt: skip
    sys.modules[old] = importlib.import_module(new)
