"""Constant-velocity Kalman filters of many boxes at once (numpy, batched over the tracks).

    kf = BoxKalman("xyah")                       # ByteTrack's box state; "xywh": BoT-SORT's
    mean, cov = kf.initiate(kf.measure(xyxy))    # ndarray[T, 8], ndarray[T, 8, 8]
    mean, cov = kf.predict(mean, cov, dt)        # dt: ndarray[T] (or a float) time steps in frames
    mean, cov = kf.update(mean, cov, kf.measure(matched_xyxy))
    boxes = kf.to_xyxy(mean)                     # ndarray[T, 4]

The state is ``(m1, m2, m3, m4, v1, v2, v3, v4)``: the measured box ``m`` and its velocity per frame. Two box
forms, as in the trackers they come from:
- ``xyah``: centre x, centre y, aspect ratio w/h, height (ByteTrack, DeepSORT); noise in proportion to the height
  (the aspect ratio gets small fixed noise);
- ``xywh``: centre x, centre y, width, height (BoT-SORT); noise in proportion to the width for x and w and to the
  height for y and h.
The noise weights are those trackers' published values (position 1/20, velocity 1/160 of the box size). The time
step ``dt`` (in frames of the nominal rate) scales the transition (``m += dt * v``) and the process noise
(a random walk: variance grows with ``dt``), so a tracker fed frames at irregular times (a live source that drops
frames) predicts as far as the time that really passed. Every operation is vectorised over the tracks: no loop
in Python, whatever their number.
"""

from __future__ import annotations

import numpy as np

FORMS = ("xyah", "xywh")
W_POS, W_VEL = 1.0 / 20, 1.0 / 160


class BoxKalman:
    """Batched constant-velocity Kalman filter of boxes in the ``form`` ``"xyah"`` or ``"xywh"``."""

    def __init__(self, form: str = "xyah") -> None:
        if form not in FORMS:
            raise ValueError(f"form={form!r}; expected one of {', '.join(FORMS)}.")
        self.form = form

    # ------------------------------------------------------------------ boxes <-> measurements
    def measure(self, xyxy: np.ndarray) -> np.ndarray:
        """xyxy (ndarray[N, 4]) -> measurements ndarray[N, 4] float64 in this filter's form."""
        b = np.asarray(xyxy, np.float64).reshape(-1, 4)
        w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
        cx, cy = b[:, 0] + w / 2, b[:, 1] + h / 2
        third = w / np.maximum(h, 1e-9) if self.form == "xyah" else w
        return np.stack([cx, cy, third, h], 1)

    def to_xyxy(self, mean: np.ndarray) -> np.ndarray:
        """States ndarray[T, 8] (or measurements [T, 4]) -> boxes ndarray[T, 4] x1, y1, x2, y2."""
        m = np.asarray(mean, np.float64)
        h = m[:, 3]
        w = m[:, 2] * h if self.form == "xyah" else m[:, 2]
        return np.stack([m[:, 0] - w / 2, m[:, 1] - h / 2, m[:, 0] + w / 2, m[:, 1] + h / 2], 1)

    def _sizes(self, m: np.ndarray) -> np.ndarray:
        """The box size each state component's noise is proportional to: ndarray[T, 4]."""
        h = m[:, 3]
        if self.form == "xyah":
            return np.stack([h, h, np.zeros_like(h), h], 1)
        w = m[:, 2]
        return np.stack([w, h, w, h], 1)

    def _fixed(self, pos: float) -> np.ndarray:
        """Noise added to the aspect-ratio component of ``xyah`` (it does not scale with the box)."""
        return np.array([0, 0, pos, 0], np.float64) if self.form == "xyah" else np.zeros(4)

    # ------------------------------------------------------------------ filter steps
    def initiate(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Measurements ndarray[N, 4] -> (mean ndarray[N, 8] with zero velocity, covariance ndarray[N, 8, 8])."""
        z = np.asarray(z, np.float64).reshape(-1, 4)
        mean = np.concatenate([z, np.zeros_like(z)], 1)
        size = self._sizes(z)
        std = np.concatenate([2 * W_POS * size + self._fixed(1e-2), 10 * W_VEL * size + self._fixed(1e-5)], 1)
        cov = np.zeros((len(z), 8, 8))
        idx = np.arange(8)
        cov[:, idx, idx] = std**2
        return mean, cov

    def predict(self, mean: np.ndarray, cov: np.ndarray, dt: float | np.ndarray = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """One step of ``dt`` frames (a float, or ndarray[T] per track) -> new (mean, covariance)."""
        if not len(mean):
            return mean, cov
        dt = np.broadcast_to(np.asarray(dt, np.float64), (len(mean),))
        d = dt[:, None]
        size = self._sizes(mean)
        q = np.concatenate([(W_POS * size + self._fixed(1e-2)) ** 2, (W_VEL * size + self._fixed(1e-5)) ** 2], 1)
        new_mean = mean.copy()
        new_mean[:, :4] += d * mean[:, 4:]
        a, b, c = cov[:, :4, :4], cov[:, :4, 4:], cov[:, 4:, 4:]
        d3 = dt[:, None, None]
        new_cov = np.empty_like(cov)
        new_cov[:, :4, :4] = a + d3 * (b + b.transpose(0, 2, 1)) + d3 * d3 * c  # F P F^T, F = [[I, dt I], [0, I]]
        new_cov[:, :4, 4:] = b + d3 * c
        new_cov[:, 4:, :4] = new_cov[:, :4, 4:].transpose(0, 2, 1)
        new_cov[:, 4:, 4:] = c
        idx = np.arange(8)
        new_cov[:, idx, idx] += q * d  # process noise of a random walk: in proportion to the time step
        return new_mean, new_cov

    def update(self, mean: np.ndarray, cov: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Correct (mean ndarray[T, 8], covariance ndarray[T, 8, 8]) with measurements z ndarray[T, 4]."""
        if not len(mean):
            return mean, cov
        z = np.asarray(z, np.float64).reshape(-1, 4)
        r = (W_POS * self._sizes(mean) + self._fixed(1e-1)) ** 2
        s = cov[:, :4, :4].copy()  # H P H^T + R with H = [I 0]
        idx = np.arange(4)
        s[:, idx, idx] += r
        ph = cov[:, :, :4]  # P H^T: [T, 8, 4]
        gain = np.linalg.solve(s, ph.transpose(0, 2, 1)).transpose(0, 2, 1)  # P H^T S^-1 (S symmetric)
        innovation = z - mean[:, :4]
        new_mean = mean + (gain @ innovation[:, :, None])[:, :, 0]
        new_cov = cov - gain @ ph.transpose(0, 2, 1)  # K S K^T = K (P H^T)^T, as K S = P H^T
        return new_mean, new_cov

    def warp(self, mean: np.ndarray, cov: np.ndarray, affine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Move the states by a camera motion ``affine`` (ndarray[2, 3], previous frame -> this frame): centres
        are mapped by it, velocities (and, for ``xywh``, the sizes) rotated and scaled by its linear part."""
        if not len(mean):
            return mean, cov
        lin, shift = np.asarray(affine[:, :2], np.float64), np.asarray(affine[:, 2], np.float64)
        if self.form == "xywh":
            blocks = [lin, lin, lin, lin]
        else:  # aspect ratio and height are not 2-D vectors: only centre and centre velocity move
            eye = np.eye(2)
            blocks = [lin, eye, lin, eye]
        big = np.zeros((8, 8))
        for k, blk in enumerate(blocks):
            big[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = blk
        new_mean = mean @ big.T
        new_mean[:, :2] += shift
        new_cov = big @ cov @ big.T
        return new_mean, new_cov
