"""Drawing detections on a frame (OpenCV only)."""

from __future__ import annotations

import colorsys

import cv2
import numpy as np

from y9deploy.detections import Detections


def class_color(class_id: int) -> tuple[int, int, int]:
    """A stable, well-separated BGR colour for a class id (golden-ratio hue steps, same on every run)."""
    h = (int(class_id) * 0.6180339887498949) % 1.0
    s = 0.85 if int(class_id) % 2 == 0 else 0.65
    r, g, b = colorsys.hsv_to_rgb(h, s, 0.95)
    return int(b * 255), int(g * 255), int(r * 255)


def _text_color(bgr: tuple[int, int, int]) -> tuple[int, int, int]:
    luma = 0.114 * bgr[0] + 0.587 * bgr[1] + 0.299 * bgr[2]
    return (0, 0, 0) if luma > 140 else (255, 255, 255)


def draw_detections(
    frame: np.ndarray,
    dets: Detections,
    *,
    thickness: int = 2,
    font_scale: float = 0.5,
    show_labels: bool = True,
    show_scores: bool = True,
) -> np.ndarray:
    """Boxes with "name score" labels drawn on a COPY of the frame (the frame is left untouched).

    Args:
        frame (ndarray[H, W, 3] uint8 BGR): the frame the detections belong to (boxes in its pixels).
        dets: the ``Detections`` of that frame.
        thickness: box line width in pixels.
        font_scale: OpenCV font scale of the labels.
        show_labels, show_scores: label text with the class name and/or the score.
    Returns:
        ndarray[H, W, 3] uint8: the annotated copy. Each class has a fixed colour (``class_color``).
    """
    from y9deploy.pre.host import check_frame

    check_frame(frame)
    if not isinstance(dets, Detections):
        raise TypeError(f"dets is a {type(dets).__name__}; expected y9deploy.Detections.")
    out = frame.copy()
    h, w = out.shape[:2]
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
            _text_color(color),
            text_thickness,
            cv2.LINE_AA,
        )
    return out
