"""The documented public path of the letterbox: ``y9deploy.preprocess.letterbox`` (DESIGN.md, "Contracts").

``letterbox(img, new_shape=640 or (h, w), *, auto=False, scaleup=True, stride=32, color=114) -> (img, (ratio_w,
ratio_h), (dw, dh))``: the same arguments and results as the official letterbox. It is ``y9core.letterbox.letterbox``
(shared with training); y9's own code imports it from there, and the rest of pre-processing from
``y9deploy.pre`` (``pre.host.prepare``: letterbox + colour + layout + normalisation into the network's blob).
"""

from __future__ import annotations

from y9core.letterbox import letterbox

__all__ = ["letterbox"]
