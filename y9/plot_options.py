"""The drawing options of ``Result.plot`` / ``save`` under YOLO tools' names, mapped once onto
``y9deploy.draw.draw_detections``'s (one sentence for a name neither has)."""

from __future__ import annotations

from typing import Any

#: YOLO tools' name -> draw_detections' name (None: handled by Result.plot itself)
ALIASES = {"line_width": "thickness", "font_size": "font_scale", "labels": "show_labels", "conf": "show_scores",
           "show_conf": "show_scores", "boxes": None}  # fmt: skip
OWN = ("thickness", "font_scale", "show_labels", "show_scores")
REFUSED = {"img": "draw on r.orig_img's copy: r.plot() returns it", "im_gpu": "y9's results are on the host",
           "kpt_radius": "y9 detects boxes, not keypoints", "kpt_line": "y9 detects boxes, not keypoints",
           "masks": "y9 detects boxes, not masks", "probs": "y9 detects boxes, not classes of whole images",
           "pil": "r.plot() returns a BGR ndarray; PIL.Image.fromarray(r.plot()[..., ::-1]) makes one",
           "color_mode": "y9 colours by class", "txt_color": "y9 draws white text on the class colour"}  # fmt: skip


def draw_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with YOLO tools' names replaced by draw_detections' (``boxes`` kept for the caller)."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name in OWN:
            out[name] = value
        elif name in ALIASES:
            key = ALIASES[name] or name
            if key == "font_scale" and value is not None:
                value = float(value) / 30.0  # a font size in pixels -> OpenCV's scale (its font is about 30 px)
            out[key] = value
        elif name in REFUSED:
            raise TypeError(f"plot() option {name!r} is not one of y9's: {REFUSED[name]}.")
        else:
            known = ", ".join(sorted(set(OWN) | set(ALIASES)))
            raise TypeError(f"plot() has no option {name!r}; expected one of: {known}.")
    if out.get("thickness") is not None and (isinstance(out["thickness"], bool) or int(out["thickness"]) < 1):
        raise ValueError(f"line_width={out['thickness']!r}; expected a whole number of pixels, at least 1.")
    return out
