"""Read an image file into the frame layout a Detector takes (HxWx3 uint8 BGR), with one-sentence errors.

The decode is ``y9core.image_read.load_image``: the header is read first and an image with more pixels than the
limit (``y9 --max-image-pixels``, ``$Y9_MAX_IMAGE_PIXELS``), cut short, or with corrupt JPEG data is refused with
an ``ImageFileError`` (a ValueError) naming the file and the reason; predict and inspect skip and report it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from y9core.image_read import decode_image


def read_image(path: str | Path) -> np.ndarray:
    """An image file -> ndarray[H, W, 3] uint8 BGR; FileNotFoundError / ImageFileError with the path named."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"image {p} does not exist." if not p.exists() else f"image path {p} is not a file."
        )
    return decode_image(p)
