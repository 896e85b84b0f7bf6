"""Drawing detections on a frame (OpenCV only): what ``y9 predict`` writes and ``Detections.annotate`` returns.

    from y9deploy.draw import draw_detections
    cv2.imwrite("out.jpg", draw_detections(frame, dets))     # == dets.annotate(frame)

Each box is drawn in its class's colour (``class_color``: a fixed, well-separated colour per class id, the same on
every run and in every tool) with a "name score" label on a filled tag whose text is black or white, whichever
reads better on that colour (the palette and the box drawing live in ``y9core.images.palette``, shared with the training
previews). Line width and text size grow with the frame (readable on 4K frames and thumbnails
alike) unless given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from y9core.images.palette import class_color, draw_box, label_text_color, line_width, relative_luminance

__all__ = ["class_color", "draw_detections", "label_text_color", "line_width", "relative_luminance"]


def draw_detections(
    frame: np.ndarray,
    dets: Any,
    *,
    thickness: int | None = None,
    font_scale: float | None = None,
    show_labels: bool = True,
    show_scores: bool = True,
) -> np.ndarray:
    """Boxes with "name score" labels drawn on a COPY of the frame (the frame is left untouched).

    Args:
        frame (ndarray[H, W, 3] uint8 BGR): the frame the detections belong to (boxes in its pixels).
        dets: the ``y9deploy.Detections`` of that frame.
        thickness: box line width in pixels (default ``line_width(frame size)``).
        font_scale: OpenCV font scale of the labels (default ``thickness / 4``).
        show_labels, show_scores: label text with the class name and/or the score.
    Returns:
        ndarray[H, W, 3] uint8: the annotated copy. Each class has a fixed colour (``class_color``).
    """
    from y9deploy.pre.host import check_frame

    check_frame(frame)
    if not all(hasattr(dets, a) for a in ("xyxy", "confidence", "class_id", "name_of")):
        raise TypeError(f"dets is a {type(dets).__name__}; expected y9deploy.Detections.")
    out = frame.copy()
    h, w = out.shape[:2]
    thickness = line_width((h, w)) if thickness is None else int(thickness)
    font_scale = thickness / 4 if font_scale is None else float(font_scale)
    for box, score, cls in dets:
        parts = ([dets.name_of(cls)] if show_labels else []) + ([f"{score:.2f}"] if show_scores else [])
        draw_box(out, box, cls, " ".join(parts), thickness=thickness, font_scale=font_scale)
    return out
