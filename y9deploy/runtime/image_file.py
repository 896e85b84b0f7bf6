"""Read an image file into the frame layout a Detector takes (HxWx3 uint8 BGR), with one-sentence errors."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def read_image(path: str | Path) -> np.ndarray:
    """An image file -> ndarray[H, W, 3] uint8 BGR; FileNotFoundError / ValueError with the path named."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"image {p} does not exist." if not p.exists() else f"image path {p} is not a file."
        )
    data = np.fromfile(str(p), dtype=np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if img is None:
        raise ValueError(
            f"{p} could not be decoded as an image (OpenCV read nothing); expected a JPEG/PNG/... file."
        )
    return img
