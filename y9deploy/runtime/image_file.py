"""What a Detector takes, as frames: ``frames_of`` (frames, batches, image paths, lists of them: each frame checked),
``read_image`` (an image file into the frame layout, HxWx3 uint8 BGR, with one-sentence errors).

The decode is ``y9core.images.read.load_image``: the header is read first and an image with more pixels than the
limit (``y9 --max-image-pixels``, ``$Y9_MAX_IMAGE_PIXELS``), cut short, or with corrupt JPEG data is refused with
an ``ImageFileError`` (a ValueError) naming the file and the reason; predict and inspect skip and report it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from y9core.files.file_paths import expect_file
from y9core.images.read import decode_image


def read_image(path: str | Path) -> np.ndarray:
    """An image file -> ndarray[H, W, 3] uint8 BGR; FileNotFoundError / ImageFileError with the path named."""
    p = Path(path)
    expect_file(p, "image")
    return decode_image(p)


def frames_of(source: Any) -> tuple[list[np.ndarray], bool]:
    """What ``Detector.predict`` takes -> ``(frames, single)``: one frame, a batch ndarray[B, H, W, 3], an image
    path, or a list of frames and/or paths; every frame checked (HxWx3 uint8, non-empty), every file read."""
    from y9deploy.pre.host import check_frame, check_frames

    if source is None:
        raise TypeError("predict() got None; expected an HxWx3 uint8 BGR frame, a list of frames, or image paths.")
    if isinstance(source, (str, Path)):
        return [read_image(source)], True
    if isinstance(source, np.ndarray):
        if source.ndim == 4:
            return check_frames(source), False
        return [check_frame(source, 0)], True
    if isinstance(source, (list, tuple)):
        if len(source) == 0:
            raise ValueError(
                f"predict() got an empty {type(source).__name__}; expected at least one frame or image path."
            )
        frames = [
            read_image(s) if isinstance(s, (str, Path)) else check_frame(s, i)
            for i, s in enumerate(source)
        ]
        return frames, False
    raise TypeError(
        f"predict() got a {type(source).__name__}; expected an HxWx3 uint8 BGR frame (numpy.ndarray), a list "
        "of frames, or image paths."
    )
