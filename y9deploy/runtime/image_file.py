"""Read an image file into the frame layout a Detector takes (HxWx3 uint8 BGR), with one-sentence errors.

The decode is ``y9core.images.read.load_image``: the header is read first and an image with more pixels than the
limit (``y9 --max-image-pixels``, ``$Y9_MAX_IMAGE_PIXELS``), cut short, or with corrupt JPEG data is refused with
an ``ImageFileError`` (a ValueError) naming the file and the reason; predict and inspect skip and report it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from y9core.files.file_paths import expect_file
from y9core.images.read import decode_image


def read_image(path: str | Path) -> np.ndarray:
    """An image file -> ndarray[H, W, 3] uint8 BGR; FileNotFoundError / ImageFileError with the path named."""
    p = Path(path)
    expect_file(p, "image")
    return decode_image(p)
