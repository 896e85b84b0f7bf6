"""The frames of a video FILE, read position by position, with a tally of those that could not be decoded.

``cv2.VideoCapture.read`` returns False both at the end of a file and for a frame it cannot decode (a corrupt
stretch in the middle of an mp4, after which later frames decode again), and a file cut short ends early without a
word. When the container states its frame count, ``file_frames`` therefore reads every position up to it: a failed
read counts as an undecodable frame and reading goes on (at most ``MAX_FAILED_IN_A_ROW`` failures in a row, so a
header that lies about the count cannot keep it reading forever); the ``FrameTally`` then says how many frames were
decoded out of how many the file declares (``shortfall``), which ``FrameReader`` and ``VideoReader`` report. Without
a stated count, the first failed read ends the file.

``check_video_written`` is the same count for a video y9 wrote: OpenCV's writer reports no failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

MAX_FAILED_IN_A_ROW = 300  # failed reads in a row after which a file is taken to have ended


@dataclass
class FrameTally:
    """Counts of one file: ``expected`` frames its container declares (None: unknown), ``decoded`` (read or
    grabbed), ``failed`` (positions that could not be decoded), ``complete`` (reading reached the end, not a stop)."""

    expected: int | None = None
    decoded: int = 0
    failed: int = 0
    complete: bool = False

    def shortfall(self, source: Any) -> str | None:
        """One sentence when frames of a fully read file were lost, or none could be decoded at all (None
        otherwise)."""
        if not self.complete:
            return None
        if self.decoded == 0:  # opened, but no frame: whatever it declares, nothing was detected in it
            declared = f" (it declares {self.expected})" if self.expected else ""
            return (f"no frame of {source}{declared} could be decoded (an empty, cut-short or corrupt file, or a codec "
                    "this OpenCV lacks); it is skipped")  # fmt: skip
        if self.expected is None or self.decoded >= self.expected:
            return None
        return (f"only {self.decoded} of the {self.expected} frames of {source} could be decoded (the file is cut "
                "short or corrupt); the results hold those frames")  # fmt: skip


def file_frames(cap: Any, tally: FrameTally, *, stride: int = 1) -> Iterator[tuple[int, np.ndarray | None]]:
    """``(position, frame)`` of an opened video file; ``frame`` is None at positions skipped by ``stride`` (grabbed,
    not decoded). ``tally`` (its ``expected`` set by the caller) is updated as frames are read; ``complete`` is set
    when the file has been read to its end (past the declared count, frames go on until the first failed read)."""
    index, in_a_row = 0, 0
    while True:
        if index % stride == 0:
            ok, image = cap.read()
            ok = ok and image is not None
        else:
            ok, image = cap.grab(), None
        if ok:
            tally.decoded += 1
            in_a_row = 0
            yield index, image
        elif tally.expected is None or index >= tally.expected or in_a_row >= MAX_FAILED_IN_A_ROW:
            break
        else:
            in_a_row += 1
        index += 1
    if tally.expected is not None:
        tally.failed = max(0, tally.expected - tally.decoded)
    tally.complete = True


def check_video_written(path: Path, frames: int) -> None:
    """Raise when the video file at ``path`` does not hold the ``frames`` frames written to it: OpenCV's writer
    reports no failure (a full disk or a file-size limit leaves a file cut short, or none).

    Raises:
        OSError naming ``path``.
    """
    cap = cv2.VideoCapture(str(path)) if path.is_file() else None
    held = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) if cap is not None and cap.isOpened() else 0
    if cap is not None:
        cap.release()
    if held < frames:
        raise OSError(f"cannot write the annotated video {path}: it holds {max(held, 0)} of the {frames} frames "
                      "written (a full disk or a file-size limit?).")  # fmt: skip
