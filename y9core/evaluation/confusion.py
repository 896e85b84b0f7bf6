"""The detection confusion matrix (numpy only): which class each ground-truth box was detected as, if any.

For each image, the detections with score >= ``conf`` and the ground truth are paired regardless of class: every
(ground truth, detection) pair with IoU >= ``iou`` is a candidate, and pairs are taken by descending IoU (ties:
ground truth, then detection, in input order) as long as neither side is taken yet. Then, with ``nc`` the class
count and index ``nc`` the background:

- a pair adds 1 to ``counts[true class, predicted class]`` (the diagonal: correct class);
- a ground-truth box left unpaired adds 1 to ``counts[true class, nc]`` (missed: detected as background);
- a detection left unpaired adds 1 to ``counts[nc, predicted class]`` (a false detection on background).

Rows are the true classes, columns the predicted ones; ``normalized()`` divides each row by its sum (the share of a
class's boxes that went to each column). The defaults (conf 0.25, IoU 0.45) are the Detector's own, so the matrix
shows what a deployed model does at its usual threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from y9core.boxes import box_iou_matrix

DEFAULT_CONF, DEFAULT_IOU = 0.25, 0.45


@dataclass(frozen=True)
class ConfusionMatrix:
    """``counts`` (ndarray[nc + 1, nc + 1] int64): rows true class, columns predicted class, index nc background.
    ``conf`` and ``iou``: the score and IoU thresholds it was made with."""

    counts: np.ndarray
    conf: float
    iou: float

    @property
    def nc(self) -> int:
        return self.counts.shape[0] - 1

    def normalized(self) -> np.ndarray:
        """Each row divided by its sum (rows without boxes stay 0): ndarray[nc + 1, nc + 1] float64."""
        total = self.counts.sum(1, keepdims=True)
        return np.divide(self.counts, total, out=np.zeros(self.counts.shape), where=total > 0)


def _pairs(iou: np.ndarray, thr: float) -> list[tuple[int, int]]:
    """Greedy one-to-one pairs (row, col) of an IoU matrix by descending IoU, each IoU >= thr."""
    rows, cols = np.nonzero(iou >= thr)
    order = np.lexsort((cols, rows, -iou[rows, cols]))
    used_r, used_c, out = set(), set(), []
    for r, c in zip(rows[order].tolist(), cols[order].tolist()):
        if r not in used_r and c not in used_c:
            used_r.add(r)
            used_c.add(c)
            out.append((r, c))
    return out


def confusion_matrix(
    preds: Sequence[np.ndarray], targets: Sequence[np.ndarray], nc: int, *, conf: float = DEFAULT_CONF,
    iou: float = DEFAULT_IOU,
) -> ConfusionMatrix:  # fmt: skip
    """The confusion matrix of per-image detections against ground truth (module docstring).

    Args:
        preds: one ``ndarray[N, 6]`` per image, rows ``(x1, y1, x2, y2, score, class)`` in pixels.
        targets: one ``ndarray[M, 5]`` per image, rows ``(class, x1, y1, x2, y2)`` in the same pixels.
        nc: number of classes; conf: score threshold; iou: IoU a pair needs.
    """
    if len(preds) != len(targets):
        raise ValueError(f"preds has {len(preds)} images but targets has {len(targets)}; expected the same count.")
    counts = np.zeros((nc + 1, nc + 1), np.int64)
    for p, t in zip(preds, targets):
        p = np.asarray(p, np.float64).reshape(-1, 6)
        t = np.asarray(t, np.float64).reshape(-1, 5)
        p = p[p[:, 4] >= conf]
        d_cls, g_cls = p[:, 5].astype(np.int64), t[:, 0].astype(np.int64)
        pairs = _pairs(box_iou_matrix(t[:, 1:5], p[:, :4]), iou) if len(p) and len(t) else []
        paired_g = np.zeros(len(t), bool)
        paired_d = np.zeros(len(p), bool)
        for g, d in pairs:
            counts[g_cls[g], d_cls[d]] += 1
            paired_g[g] = paired_d[d] = True
        np.add.at(counts, (g_cls[~paired_g], nc), 1)
        np.add.at(counts, (nc, d_cls[~paired_d]), 1)
    return ConfusionMatrix(counts, float(conf), float(iou))
