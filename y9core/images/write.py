"""Write an image file with its result checked: ``cv2.imwrite`` only returns False (and a full disk may even give
True for a file cut short), so the image is encoded in memory and written through ``y9core.files.atomic_write``, whose
``OSError`` names the file and the reason (a full disk, a file-size limit, a read-only folder)."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from y9core.files.atomic_write import atomic_write


def write_image(path: str | os.PathLike, image: np.ndarray, *, durable: bool = False) -> Path:
    """Encode ``image`` (HxWx3 uint8 BGR) by ``path``'s suffix (.jpg, .png, ...) and write it atomically.

    Raises:
        ValueError: OpenCV cannot encode it in that format (the suffix named). OSError: naming ``path``.
    """
    path = Path(path)
    try:
        ok, buf = cv2.imencode(path.suffix or ".jpg", image)
    except cv2.error:
        ok, buf = False, None
    if not ok or buf is None:
        raise ValueError(f"cannot encode the image for {path} as {path.suffix or '.jpg'!r}; expected a suffix "
                         "OpenCV writes (.jpg, .png, .bmp, .tif, .webp).")  # fmt: skip
    return atomic_write(path, memoryview(buf).cast("B"), durable=durable)
