"""Camera motion between consecutive frames (BoT-SORT's global motion compensation, sparse optical flow).

    cm = CameraMotion()
    for frame in frames:
        affine = cm.step(frame)      # ndarray[2, 3]: previous frame -> this frame (None on the first frame)

Corners (``cv2.goodFeaturesToTrack``) of the previous frame, at half resolution, are followed into this frame
by pyramidal Lucas-Kanade optical flow; a similarity transform (rotation, uniform scale, translation) is fitted
to them with RANSAC (``cv2.estimateAffinePartial2D``), so the moving objects (outliers) do not bias it. With too
few points (a blank or uniform view) the motion is taken as none (identity).
"""

from __future__ import annotations

import cv2
import numpy as np

MIN_POINTS = 8


class CameraMotion:
    """Frame-to-frame camera motion of one video; ``downscale``: work at 1/downscale resolution."""

    def __init__(self, downscale: int = 2, max_corners: int = 1000) -> None:
        self.downscale, self.max_corners = int(downscale), int(max_corners)
        self.reset()

    def reset(self) -> None:
        self.prev: np.ndarray | None = None
        self.points: np.ndarray | None = None

    def _grey(self, frame: np.ndarray) -> np.ndarray:
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame
        if self.downscale > 1:
            h, w = grey.shape[:2]
            grey = cv2.resize(grey, (w // self.downscale, h // self.downscale), interpolation=cv2.INTER_AREA)
        return grey

    def step(self, frame: np.ndarray) -> np.ndarray | None:
        """The affine ndarray[2, 3] (frame pixels) from the previous frame to ``frame``; None for the first
        frame or a frame of another size (the motion starts again from it)."""
        grey = self._grey(frame)
        prev, points = self.prev, self.points
        self.prev = grey
        self.points = cv2.goodFeaturesToTrack(grey, self.max_corners, 0.01, 1, blockSize=3, useHarrisDetector=False,
                                              k=0.04)  # fmt: skip
        if prev is None or prev.shape != grey.shape:
            return None
        affine = np.eye(2, 3)
        if points is None or len(points) < MIN_POINTS:
            return affine
        moved, status, _ = cv2.calcOpticalFlowPyrLK(prev, grey, points, None)
        ok = status.reshape(-1).astype(bool)
        if ok.sum() < MIN_POINTS:
            return affine
        fit, _ = cv2.estimateAffinePartial2D(points[ok], moved[ok], method=cv2.RANSAC)
        if fit is None:
            return affine
        fit = fit.astype(np.float64)
        fit[:, 2] *= self.downscale  # the translation back in full-resolution pixels
        return fit
