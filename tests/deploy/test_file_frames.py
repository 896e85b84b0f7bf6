"""``file_frames`` and its ``FrameTally``: what a video file that decodes badly says (read through a scripted
capture: the reads of a file, as OpenCV returns them)."""

from __future__ import annotations

import numpy as np
import pytest

from y9deploy.pipelines.sources.file_frames import FrameTally, file_frames


class Reads:
    """A capture whose ``read`` returns the scripted outcomes in order (True: a frame), then the end of the file."""

    def __init__(self, outcomes: list[bool]):
        self.outcomes = list(outcomes)

    def read(self):
        ok = self.outcomes.pop(0) if self.outcomes else False
        return ok, (np.zeros((4, 4, 3), np.uint8) if ok else None)

    def grab(self):
        return self.read()[0]


@pytest.mark.parametrize(
    "outcomes,expected,frames,says",
    [
        ([True] * 5, 5, 5, None),
        ([True] * 5, None, 5, None),
        ([True, False, True, False, True], 5, 3, "only 3 of the 5 frames of v.avi could be decoded"),
        ([], None, 0, "no frame of v.avi could be decoded"),  # no count declared, nothing decodes: was silent
        ([False] * 5, 5, 0, "no frame of v.avi (it declares 5) could be decoded"),
    ],
)
def test_a_file_says_what_it_lost(outcomes, expected, frames, says):
    tally = FrameTally(expected=expected)
    got = [i for i, image in file_frames(Reads(outcomes), tally) if image is not None]
    assert len(got) == frames and tally.complete
    short = tally.shortfall("v.avi")
    assert short == says if says is None else says in short


def test_a_stopped_read_says_nothing():
    assert FrameTally(expected=5, decoded=0, complete=False).shortfall("v.avi") is None
