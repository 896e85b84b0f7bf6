"""Camera motion between consecutive frames (BoT-SORT's global motion compensation, sparse optical flow).

    cm = CameraMotion()
    for frame in frames:
        affine = cm.step(frame, dets.xyxy)   # ndarray[2, 3]: previous frame -> this frame (None: first frame)

Corners (``cv2.goodFeaturesToTrack``) of the previous frame, at half resolution and outside the boxes of the
detections (moving objects are not the camera), are followed into this frame by pyramidal Lucas-Kanade optical
flow; a similarity transform (rotation, uniform scale, translation) is fitted
to them with RANSAC (``cv2.estimateAffinePartial2D``), so the moving objects (outliers) do not bias it. With too
few points (a blank or uniform view), or when the points that agree on the motion span less than half the frame's
width or height (they are on one object, not on the scenery), the motion is taken as none (identity).
"""

from __future__ import annotations

import cv2
import numpy as np

MIN_POINTS = 8
MIN_SPREAD = 0.5  # the agreeing points must span half the frame's width and height


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

    def step(self, frame: np.ndarray, boxes: np.ndarray | None = None) -> np.ndarray | None:
        """The affine ndarray[2, 3] (frame pixels) from the previous frame to ``frame``; None for the first
        frame or a frame of another size (the motion starts again from it). ``boxes`` (ndarray[N, 4] xyxy): the
        detections of ``frame``, whose pixels are not used as landmarks for the next frame."""
        grey = self._grey(frame)
        prev, points = self.prev, self.points
        self.prev = grey
        mask = np.full(grey.shape[:2], 255, np.uint8)
        for x1, y1, x2, y2 in np.asarray(boxes if boxes is not None else np.zeros((0, 4))).reshape(-1, 4):
            x1, y1, x2, y2 = (int(v / self.downscale) for v in (x1, y1, x2 + self.downscale, y2 + self.downscale))
            mask[max(0, y1) : max(0, y2), max(0, x1) : max(0, x2)] = 0
        self.points = cv2.goodFeaturesToTrack(grey, self.max_corners, 0.01, 1, mask=mask, blockSize=3,
                                              useHarrisDetector=False, k=0.04)  # fmt: skip
        if prev is None or prev.shape != grey.shape:
            return None
        affine = np.eye(2, 3)
        if points is None or len(points) < MIN_POINTS:
            return affine
        moved, status, _ = cv2.calcOpticalFlowPyrLK(prev, grey, points, None)
        ok = status.reshape(-1).astype(bool)
        if ok.sum() < MIN_POINTS:
            return affine
        fit, inliers = cv2.estimateAffinePartial2D(points[ok], moved[ok], method=cv2.RANSAC)
        if fit is None or inliers is None:
            return affine
        used = points[ok].reshape(-1, 2)[inliers.reshape(-1).astype(bool)]
        spread = np.ptp(used, axis=0) if len(used) else np.zeros(2)
        if len(used) < MIN_POINTS or (spread < MIN_SPREAD * np.array(grey.shape[1::-1])).any():
            return affine  # the points that agree sit in one part of the view: an object moved, not the camera
        fit = fit.astype(np.float64)
        fit[:, 2] *= self.downscale  # the translation back in full-resolution pixels
        return fit
