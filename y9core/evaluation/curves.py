"""The curves behind the validation numbers (numpy only): precision-recall at IoU 0.50 and precision, recall and
F1 against the confidence threshold, per class.

Both start from the same matched detections as ``y9core.evaluation.metrics.evaluate`` (``tp``: COCO's greedy matching at
IoU >= 0.50, after its max_det cut), so they agree with its numbers:

- ``pr_curves``: COCO's 101-point interpolated precision at IoU 0.50 (recall 0, 0.01, ..., 1): detections of a
  class by descending score (ties in input order), precision = TP / detections so far, recall = TP / ground truth,
  precision made non-increasing from the right (the envelope), read at the first detection reaching each recall
  (0 where the recall is never reached). The mean of a class's curve is its AP50 (``map50`` is the mean over
  classes with ground truth).
- ``confidence_curves``: for each threshold t, P = TP / detections with score >= t (0 when there are none),
  R = TP / ground truth, F1 = 2PR / (P + R) (0 when P + R = 0).
Classes without ground truth get rows of nan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RECALL_POINTS = np.linspace(0.0, 1.0, 101)  # COCO's recThrs
CONFIDENCE_POINTS = np.linspace(0.0, 1.0, 101)  # the threshold grid of the P, R and F1 curves


def confidence_curves(
    cls: np.ndarray, score: np.ndarray, tp: np.ndarray, n_gt: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall per class at each threshold.

    Args:
        cls (ndarray[D] int), score (ndarray[D]), tp (ndarray[D] bool): the detections and whether each matched.
        n_gt (ndarray[nc] int): ground-truth boxes per class. thresholds (ndarray[T]).
    Returns:
        (precision, recall): ndarray[nc, T] each, nan rows for classes without ground truth.
    """
    nc, t = len(n_gt), len(thresholds)
    prec = np.full((nc, t), np.nan)
    rec = np.full((nc, t), np.nan)
    for c in np.flatnonzero(n_gt > 0):
        m = cls == c
        order = np.argsort(-score[m], kind="stable")
        s_desc, cum_tp = score[m][order], np.r_[0, np.cumsum(tp[m][order])]
        n_above = np.searchsorted(-s_desc, -thresholds, side="right")  # detections with score >= t
        tps = cum_tp[n_above]
        prec[c] = np.where(n_above > 0, tps / np.maximum(n_above, 1), 0.0)
        rec[c] = tps / n_gt[c]
    return prec, rec


def f1_score(prec: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """2PR / (P + R), 0 where P + R = 0 (nan stays nan)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prec + rec > 0, 2 * prec * rec / (prec + rec), np.where(np.isnan(prec), np.nan, 0.0))


def pr_curves(cls: np.ndarray, score: np.ndarray, tp: np.ndarray, n_gt: np.ndarray) -> np.ndarray:
    """COCO's interpolated precision at ``RECALL_POINTS`` per class (module docstring): ndarray[nc, 101]."""
    out = np.full((len(n_gt), len(RECALL_POINTS)), np.nan)
    for c in np.flatnonzero(n_gt > 0):
        m = cls == c
        order = np.argsort(-score[m], kind="mergesort")
        hits = tp[m][order]
        out[c] = 0.0
        if len(hits) == 0:
            continue
        cum_tp = np.cumsum(hits)
        recall = cum_tp / n_gt[c]
        envelope = np.maximum.accumulate((cum_tp / np.arange(1, len(hits) + 1))[::-1])[::-1]
        idx = np.searchsorted(recall, RECALL_POINTS, side="left")
        reached = idx < len(hits)
        out[c, reached] = envelope[idx[reached]]
    return out


@dataclass(frozen=True)
class ValCurves:
    """The curves of one validation (module docstring).

    Attributes:
        recall (ndarray[101]): recall points; pr (ndarray[nc, 101]): interpolated precision at IoU 0.50.
        confidence (ndarray[101]): thresholds; precision, recall_at, f1 (ndarray[nc, 101]) at those thresholds.
        n_gt (ndarray[nc]): ground-truth boxes per class (nan rows where 0).
    """

    recall: np.ndarray
    pr: np.ndarray
    confidence: np.ndarray
    precision: np.ndarray
    recall_at: np.ndarray
    f1: np.ndarray
    n_gt: np.ndarray

    @classmethod
    def compute(cls, det_cls: np.ndarray, score: np.ndarray, tp: np.ndarray, n_gt: np.ndarray) -> ValCurves:
        prec, rec = confidence_curves(det_cls, score, tp, n_gt, CONFIDENCE_POINTS)
        return cls(RECALL_POINTS.copy(), pr_curves(det_cls, score, tp, n_gt), CONFIDENCE_POINTS.copy(), prec, rec,
                   f1_score(prec, rec), np.asarray(n_gt).copy())  # fmt: skip

    @property
    def classes(self) -> np.ndarray:
        """The classes with ground truth (the rows that are curves)."""
        return np.flatnonzero(self.n_gt > 0)

    def to_dict(self, names: list[str]) -> dict:
        """JSON-able: the grids, and per class with ground truth its curves by name (``names`` by class id)."""
        rows = {}
        for c in self.classes:
            rows[names[c]] = {"class": int(c), "pr": _round(self.pr[c]), "precision": _round(self.precision[c]),
                              "recall": _round(self.recall_at[c]), "f1": _round(self.f1[c])}  # fmt: skip
        return {"recall_points": _round(self.recall), "confidence_points": _round(self.confidence), "classes": rows}


def _round(a: np.ndarray) -> list[float]:
    return [round(float(v), 6) for v in a]
