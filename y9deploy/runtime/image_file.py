"""Read an image file into the frame layout a Detector takes (HxWx3 uint8 BGR), with one-sentence errors."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from y9core.file_paths import expect_file


def read_image(path: str | Path) -> np.ndarray:
    """An image file -> ndarray[H, W, 3] uint8 BGR; FileNotFoundError / ValueError with the path named."""
    p = Path(path)
    expect_file(p, "image")
    data = np.fromfile(str(p), dtype=np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if img is None:
        raise ValueError(
            f"{p} could not be decoded as an image (OpenCV read nothing); expected a JPEG/PNG/... file."
        )
    return img
