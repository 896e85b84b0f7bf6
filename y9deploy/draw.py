"""Drawing detections on a frame (OpenCV only): what ``y9 predict`` writes and ``Detections.annotate`` returns.

    from y9deploy.draw import draw_detections
    cv2.imwrite("out.jpg", draw_detections(frame, dets))     # == dets.annotate(frame)

Each box is drawn in its class's colour (``class_color``: a fixed, well-separated colour per class id, the same on
every run and in every tool) with a "name score" label on a filled tag whose text is black or white, whichever
reads better on that colour. Line width and text size grow with the frame (readable on 4K frames and thumbnails
alike) unless given.
"""

from __future__ import annotations

import colorsys
from typing import Any

import cv2
import numpy as np


def class_color(class_id: int) -> tuple[int, int, int]:
    """A stable, well-separated BGR colour for a class id (golden-ratio hue steps, same on every run)."""
    h = (int(class_id) * 0.6180339887498949) % 1.0
    s = 0.85 if int(class_id) % 2 == 0 else 0.65
    r, g, b = colorsys.hsv_to_rgb(h, s, 0.95)
    return int(b * 255), int(g * 255), int(r * 255)


def relative_luminance(bgr: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an 8-bit sRGB colour (0 black .. 1 white)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in bgr)]
    return 0.0722 * lin[0] + 0.7152 * lin[1] + 0.2126 * lin[2]


def label_text_color(bgr: tuple[int, int, int]) -> tuple[int, int, int]:
    """Black or white, whichever has the higher WCAG contrast ratio on a label tag of colour ``bgr``."""
    lum = relative_luminance(bgr)
    return (0, 0, 0) if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else (255, 255, 255)


def line_width(frame_hw: tuple[int, int]) -> int:
    """The default box line width for a frame of (h, w) pixels: 2 px up to about 1 megapixel, then growing."""
    return max(2, round(0.003 * (frame_hw[0] + frame_hw[1]) / 2))


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
    from y9deploy.preprocess import check_frame

    check_frame(frame)
    if not all(hasattr(dets, a) for a in ("xyxy", "confidence", "class_id", "name_of")):
        raise TypeError(f"dets is a {type(dets).__name__}; expected y9deploy.Detections.")
    out = frame.copy()
    h, w = out.shape[:2]
    thickness = line_width((h, w)) if thickness is None else int(thickness)
    font_scale = thickness / 4 if font_scale is None else float(font_scale)
    font = cv2.FONT_HERSHEY_SIMPLEX
    text_thickness = max(1, thickness // 2)
    for box, score, cls in dets:
        color = class_color(cls)
        x1, y1, x2, y2 = (int(round(float(v))) for v in box)
        x1, x2 = max(0, min(x1, w - 1)), max(0, min(x2, w - 1))
        y1, y2 = max(0, min(y1, h - 1)), max(0, min(y2, h - 1))
        cv2.rectangle(out, (x1, y1), (x2, y2), color, thickness, cv2.LINE_AA)
        parts = ([dets.name_of(cls)] if show_labels else []) + ([f"{score:.2f}"] if show_scores else [])
        if not parts:
            continue
        label = " ".join(parts)
        (tw, th), base = cv2.getTextSize(label, font, font_scale, text_thickness)
        top = y1 - th - base - 2
        if top < 0:  # no room above the box: put the label inside
            top = y1
        cv2.rectangle(out, (x1, top), (x1 + tw + 2, top + th + base + 2), color, -1)
        cv2.putText(
            out,
            label,
            (x1 + 1, top + th + 1),
            font,
            font_scale,
            label_text_color(color),
            text_thickness,
            cv2.LINE_AA,
        )
    return out
