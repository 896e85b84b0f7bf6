"""Colours and labelled boxes, shared by every picture y9 draws (``y9deploy.draw``: annotated frames;
``y9train.reports.previews``: training batches): one fixed, well-separated colour per class id, label text black or white
by contrast, line width growing with the image. OpenCV only."""

from __future__ import annotations

import colorsys

import cv2
import numpy as np

FONT = cv2.FONT_HERSHEY_SIMPLEX


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


def draw_box(
    img: np.ndarray, box: np.ndarray, class_id: int, label: str, *, thickness: int, font_scale: float
) -> None:
    """Draw one box (x1, y1, x2, y2 in pixels, clipped to the image) in its class colour, IN PLACE, with ``label``
    (if any) on a filled tag above it (inside it when there is no room above)."""
    h, w = img.shape[:2]
    color = class_color(class_id)
    x1, y1, x2, y2 = (int(round(float(v))) for v in box)
    x1, x2 = max(0, min(x1, w - 1)), max(0, min(x2, w - 1))
    y1, y2 = max(0, min(y1, h - 1)), max(0, min(y2, h - 1))
    cv2.rectangle(img, (x1, y1), (x2, y2), color, thickness, cv2.LINE_AA)
    if not label:
        return
    text_thickness = max(1, thickness // 2)
    (tw, th), base = cv2.getTextSize(label, FONT, font_scale, text_thickness)
    top = y1 - th - base - 2
    if top < 0:  # no room above the box: put the label inside
        top = y1
    cv2.rectangle(img, (x1, top), (x1 + tw + 2, top + th + base + 2), color, -1)
    cv2.putText(img, label, (x1 + 1, top + th + 1), FONT, font_scale, label_text_color(color), text_thickness,
                cv2.LINE_AA)  # fmt: skip
