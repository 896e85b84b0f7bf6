"""COCO-style detection metrics: mAP50, mAP50-95, AP small/medium/large, per-class AP, P/R/F1.

``evaluate(preds, targets)`` turns per-image arrays into a COCO ground-truth set and a COCO result set and runs
faster-coco-eval (a maintained C++ port of pycocotools' COCOeval; the tests prove equality with pycocotools):

- AP is COCO's: 10 IoU thresholds 0.50:0.05:0.95, 101-point interpolated precision, mean over classes that
  have ground truth; ``map50`` is the 0.50 threshold alone.
- Areas: COCO splits small (< 32^2), medium (32^2..96^2) and large (> 96^2) on the ground-truth annotation
  ``area`` field. We have no segmentation, so that area is the box area ``w * h`` in the pixels the arrays are
  given in (COCO's own area is the mask area, a bit smaller than the box: figures are close to, not identical
  with, an official COCO evaluation). Detections use their box area, as pycocotools' ``loadRes`` does.
- ``max_det`` (default 100, COCO's ``maxDets``) is the number of detections kept per image AND PER CLASS,
  highest scores first (ties in input order): that is what pycocotools does. The same detections feed AP and
  precision/recall. Postprocess with at least this many detections per image (the Detector's max_det=300).
- An empty area range (no ground truth of that size) makes COCO report -1: here it is ``float("nan")``;
  no ground truth at all makes every AP nan (and ``fitness`` nan).
- Precision/recall/F1: detections are matched to ground truth at IoU >= 0.5 the COCO way (per image and
  class, by descending score, each detection to the unmatched ground truth of highest IoU). For each
  confidence threshold t (all distinct scores, or 1000 score quantiles when there are more) every class with
  ground truth gets P = TP/(detections >= t) (0 when none), R = TP/GT and F1; the threshold with the highest
  mean F1 over classes wins (the lowest such t on ties) and ``precision``, ``recall``, ``f1`` are the means
  over classes there, ``conf`` the threshold.
- ``fitness = 0.1 * map50 + 0.9 * map50_95`` (the early-stopping criterion).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from y9core.boxes import box_iou
from y9core.evaluation.curves import ValCurves, confidence_curves, f1_score

__all__ = ["evaluate", "evaluator_name", "fitness", "match_at_iou"]

_logger = logging.getLogger(__name__)


def evaluator_name() -> str:
    """What computes the AP figures, with its version, as every validation report names it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("faster-coco-eval")
    except PackageNotFoundError:
        found = "(version unknown)"
    return f"faster-coco-eval {found}: COCOeval_faster, COCO bbox AP at IoU 0.50:0.05:0.95, 101 recall points"
_MAX_THRESHOLDS = 1000


def fitness(map50: float, map50_95: float) -> float:
    """Early-stopping criterion: ``0.1 * map50 + 0.9 * map50_95``."""
    return 0.1 * map50 + 0.9 * map50_95


def _as_rows(arrays: Sequence, width: int, what: str) -> list[np.ndarray]:
    """Check and convert per-image arrays to float64 ``ndarray[K, width]`` (empty arrays of any shape allowed)."""
    rows = []
    for i, a in enumerate(arrays):
        a = np.asarray(a, dtype=np.float64)
        if a.size == 0:
            a = np.zeros((0, width))
        if a.ndim != 2 or a.shape[1] != width:
            raise ValueError(f"{what}[{i}] has shape {tuple(a.shape)}; expected (K, {width}).")
        if not np.isfinite(a).all():
            raise ValueError(f"{what}[{i}] holds non-finite values; expected finite numbers.")
        rows.append(a)
    return rows


def _check_classes(cls: np.ndarray, nc: int, what: str) -> np.ndarray:
    """Return ``cls`` as int64 after checking it holds integers in [0, nc)."""
    if cls.size and (np.any(cls != np.round(cls)) or cls.min() < 0 or cls.max() >= nc):
        bad = cls[(cls != np.round(cls)) | (cls < 0) | (cls >= nc)][0]
        raise ValueError(f"{what} holds class {float(bad):g}; expected integers in [0, {nc}).")
    return cls.astype(np.int64)


def _keep_top_per_image_class(
    img: np.ndarray, cls: np.ndarray, score: np.ndarray, max_det: int
) -> np.ndarray:
    """Boolean mask of the ``max_det`` highest-scoring detections of each (image, class), ties in input order."""
    order = np.lexsort((np.arange(len(score)), -score, cls, img))
    key = img[order] * (cls.max(initial=0) + 1) + cls[order]
    starts = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    keep = np.zeros(len(score), dtype=bool)
    keep[order[rank < max_det]] = True
    return keep


def _coco_corners(xywh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """xywh (ndarray[K, 4]) -> (ndarray[K, 4] corners ``(x, y, x + w, y + h)``, ndarray[K] areas ``w * h``):
    pycocotools' arithmetic, for ``y9core.boxes`` (whose IoU of them, with ``zero_empty``, is pycocotools')."""
    return np.c_[xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], xywh[:, 2] * xywh[:, 3]


def match_at_iou(
    d_key: np.ndarray,
    d_score: np.ndarray,
    d_xywh: np.ndarray,
    g_key: np.ndarray,
    g_xywh: np.ndarray,
    thr: float,
) -> np.ndarray:
    """COCO greedy matching of detections to ground truth inside groups (one group = one image and class).

    Args:
        d_key (ndarray[D] int), d_score (ndarray[D]), d_xywh (ndarray[D, 4]): detections.
        g_key (ndarray[G] int), g_xywh (ndarray[G, 4]): ground truth (none crowd, none ignored).
        thr: IoU threshold (a match needs IoU >= thr).
    Returns:
        ndarray[D] bool: True where the detection is a true positive.
    Detections of a group are taken by descending score (ties in input order); each takes the unmatched ground
    truth of highest IoU (the last of equal ones, as pycocotools does). Vectorised over groups: round r handles
    the r-th detection of every group at once.
    """
    tp = np.zeros(len(d_key), dtype=bool)
    if len(d_key) == 0 or len(g_key) == 0:
        return tp
    g_order = np.argsort(g_key, kind="stable")
    g_key_s = g_key[g_order]
    d_box, d_area = _coco_corners(d_xywh)
    g_box, g_area = _coco_corners(g_xywh[g_order])
    uniq, g_start, g_count = np.unique(g_key_s, return_index=True, return_counts=True)
    pos = np.searchsorted(uniq, d_key)
    has_gt = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == d_key)
    d_idx = np.flatnonzero(has_gt)
    d_start, d_count = g_start[pos[d_idx]], g_count[pos[d_idx]]
    order = np.lexsort((np.arange(len(d_idx)), -d_score[d_idx], d_key[d_idx]))
    d_idx, d_start, d_count = d_idx[order], d_start[order], d_count[order]
    keys = d_key[d_idx]
    first = np.r_[0, np.flatnonzero(np.diff(keys)) + 1]
    rank = np.arange(len(keys)) - np.repeat(first, np.diff(np.r_[first, len(keys)]))
    matched = np.zeros(len(g_key_s), dtype=bool)
    for r in range(int(rank.max(initial=-1)) + 1):
        sel = np.flatnonzero(rank == r)
        n = d_count[sel]
        det = np.repeat(sel, n)  # one row per (detection, candidate ground truth) pair
        gt = np.repeat(d_start[sel] - np.r_[0, np.cumsum(n)[:-1]], n) + np.arange(n.sum())
        dd = d_idx[det]
        iou = box_iou(d_box[dd], g_box[gt], area_a=d_area[dd], area_b=g_area[gt], zero_empty=True)
        ok = (iou >= thr) & ~matched[gt]
        val = np.where(ok, iou, -1.0)
        seg = np.r_[0, np.cumsum(n)[:-1]]
        best = np.maximum.reduceat(val, seg)
        last = np.maximum.reduceat(np.where(val == np.repeat(best, n), np.arange(len(gt)), -1), seg)
        hit = best >= 0
        matched[gt[last[hit]]] = True
        tp[d_idx[sel[hit]]] = True
    return tp


def _best_f1(cls: np.ndarray, score: np.ndarray, tp: np.ndarray, n_gt: np.ndarray) -> dict:
    """Precision/recall/F1 per class at the confidence of the best mean F1 (see the module docstring)."""
    classes = np.flatnonzero(n_gt > 0)
    out = {"precision": float("nan"), "recall": float("nan"), "f1": float("nan"), "conf": float("nan")}
    p_cls = np.full(len(n_gt), np.nan)
    r_cls = np.full(len(n_gt), np.nan)
    if len(classes) == 0:
        return {**out, "p_cls": p_cls, "r_cls": r_cls}
    thr = np.unique(score)
    if len(thr) > _MAX_THRESHOLDS:
        thr = np.unique(np.quantile(score, np.linspace(0.0, 1.0, _MAX_THRESHOLDS)))
    if len(thr) == 0:
        thr = np.array([0.0])
    prec, rec = confidence_curves(cls, score, tp, n_gt, thr)
    prec, rec = prec[classes], rec[classes]
    f1 = f1_score(prec, rec)
    best = int(np.argmax(f1.mean(0)))
    p_cls[classes], r_cls[classes] = prec[:, best], rec[:, best]
    return {
        "precision": float(prec[:, best].mean()),
        "recall": float(rec[:, best].mean()),
        "f1": float(f1[:, best].mean()),
        "conf": float(thr[best]),
        "p_cls": p_cls,
        "r_cls": r_cls,
    }


def _mean_valid(x: np.ndarray) -> float:
    """Mean of the entries > -1 (COCO's convention for 'undefined'), nan when there are none."""
    v = x[x > -1]
    return float(v.mean()) if v.size else float("nan")


def _coco_precision(d_img, d_cls, d_score, d_xywh, g_img, g_cls, g_xywh, n_images, nc, max_det) -> np.ndarray:
    """Run faster-coco-eval; returns COCO's precision array ``ndarray[10, 101, nc, 4, 1]`` (-1 = undefined)."""
    try:
        from faster_coco_eval import COCO, COCOeval_faster
    except ImportError as exc:
        raise ModuleNotFoundError(
            "COCO metrics need the faster-coco-eval package, which is not installed; "
            "install it with: pip install faster-coco-eval (it comes with y9[onnx] and y9[train]; no torch)."
        ) from exc

    images = [{"id": i + 1, "height": 1, "width": 1} for i in range(n_images)]
    cats = [{"id": c + 1, "name": str(c)} for c in range(nc)]
    g_area = g_xywh[:, 2] * g_xywh[:, 3]
    gt = COCO()
    gt.dataset = {
        "images": images,
        "categories": cats,
        "annotations": [
            {
                "id": k + 1,
                "image_id": int(i) + 1,
                "category_id": int(c) + 1,
                "bbox": b,
                "area": a,
                "iscrowd": 0,
            }
            for k, (i, c, b, a) in enumerate(zip(g_img, g_cls, g_xywh.tolist(), g_area.tolist(), strict=True))
        ],
    }
    gt.createIndex()
    d_area = d_xywh[:, 2] * d_xywh[:, 3]
    dt = COCO()
    dt.dataset = {
        "images": images,
        "categories": cats,
        "annotations": [
            {"id": k + 1, "image_id": int(i) + 1, "category_id": int(c) + 1, "bbox": b, "score": s, "area": a,
             "iscrowd": 0}
            for k, (i, c, b, s, a) in enumerate(
                zip(d_img, d_cls, d_xywh.tolist(), d_score.tolist(), d_area.tolist(), strict=True)
            )
        ],
    }  # fmt: skip
    dt.createIndex()
    ev = COCOeval_faster(gt, dt, "bbox", print_function=_logger.debug)
    ev.params.imgIds = list(range(1, n_images + 1))
    ev.params.catIds = list(range(1, nc + 1))
    ev.params.maxDets = [max_det]
    ev.evaluate()
    ev.accumulate()
    return np.asarray(ev.eval["precision"])


def evaluate(
    preds: Sequence,
    targets: Sequence,
    *,
    nc: int | None = None,
    names: Sequence[str] | None = None,
    max_det: int = 100,
) -> dict:
    """COCO metrics of detections against ground truth (definitions in the module docstring).

    Args:
        preds: one ``ndarray[N, 6]`` per image, rows ``(x1, y1, x2, y2, score, class)`` in pixels.
        targets: one ``ndarray[M, 5]`` per image, rows ``(class, x1, y1, x2, y2)`` in the same pixels.
        nc: number of classes (default ``len(names)``, else 1 + the largest class seen).
        names: class names (default ``"class0"``...).
        max_det: detections kept per image and class (COCO's maxDets, 100).
    Returns:
        dict with ``map50_95``, ``map50``, ``map75``, ``map_small``, ``map_medium``, ``map_large`` (fractions,
        nan when undefined), ``precision``, ``recall``, ``f1``, ``conf`` (best mean-F1 confidence), ``fitness``,
        ``per_class`` (a list of nc dicts: ``class``, ``name``, ``n_gt``, ``map50_95``, ``map50``,
        ``precision``, ``recall``; nan for classes without ground truth), ``n_images``, ``n_targets``,
        ``n_preds`` (after the max_det cut), ``max_det``, ``evaluator`` (what computed the AP figures) and
        ``curves`` (``y9core.evaluation.curves.ValCurves``: PR at IoU 0.50 and P/R/F1 against the confidence, per class).
    """
    if len(preds) != len(targets):
        raise ValueError(
            f"preds has {len(preds)} images but targets has {len(targets)}; expected the same count."
        )
    if int(max_det) < 1:
        raise ValueError(f"max_det is {max_det}; expected a positive integer.")
    p_rows = _as_rows(preds, 6, "preds")
    t_rows = _as_rows(targets, 5, "targets")
    n_images = len(p_rows)
    d = np.concatenate(p_rows) if p_rows else np.zeros((0, 6))
    g = np.concatenate(t_rows) if t_rows else np.zeros((0, 5))
    d_img = np.repeat(np.arange(n_images), [len(a) for a in p_rows])
    g_img = np.repeat(np.arange(n_images), [len(a) for a in t_rows])
    if nc is None:
        seen = np.concatenate([d[:, 5], g[:, 0]])
        nc = len(names) if names is not None else (int(seen.max()) + 1 if seen.size else 0)
    if names is not None and len(names) != nc:
        raise ValueError(f"names has {len(names)} entries but nc is {nc}; expected one name per class.")
    names = list(names) if names is not None else [f"class{c}" for c in range(nc)]
    d_cls = _check_classes(d[:, 5], nc, "preds")
    g_cls = _check_classes(g[:, 0], nc, "targets")
    if np.any(g[:, 3:5] < g[:, 1:3]):
        i = int(g_img[np.any(g[:, 3:5] < g[:, 1:3], axis=1)][0])
        raise ValueError(
            f"targets[{i}] holds a box with x2 < x1 or y2 < y1; expected (class, x1, y1, x2, y2)."
        )

    keep = _keep_top_per_image_class(d_img, d_cls, d[:, 4], int(max_det))
    d, d_img, d_cls = d[keep], d_img[keep], d_cls[keep]
    d_xywh = np.c_[d[:, :2], d[:, 2:4] - d[:, :2]]
    g_xywh = np.c_[g[:, 1:3], g[:, 3:5] - g[:, 1:3]]
    n_gt = np.bincount(g_cls, minlength=nc)

    if nc > 0 and n_images > 0:
        precision = _coco_precision(
            d_img, d_cls, d[:, 4], d_xywh, g_img, g_cls, g_xywh, n_images, nc, max_det
        )
    else:
        precision = -np.ones((10, 101, max(nc, 0), 4, 1))
    prec = precision[..., 0]  # [T, R, K, area]
    tp = match_at_iou(d_img * nc + d_cls, d[:, 4], d_xywh, g_img * nc + g_cls, g_xywh, 0.5)
    prf = _best_f1(d_cls, d[:, 4], tp, n_gt)

    res = {
        "map50_95": _mean_valid(prec[:, :, :, 0]),
        "map50": _mean_valid(prec[0, :, :, 0]),
        "map75": _mean_valid(prec[5, :, :, 0]),
        "map_small": _mean_valid(prec[:, :, :, 1]),
        "map_medium": _mean_valid(prec[:, :, :, 2]),
        "map_large": _mean_valid(prec[:, :, :, 3]),
        "precision": prf["precision"],
        "recall": prf["recall"],
        "f1": prf["f1"],
        "conf": prf["conf"],
    }
    res["fitness"] = fitness(res["map50"], res["map50_95"])
    res["per_class"] = [
        {
            "class": c,
            "name": names[c],
            "n_gt": int(n_gt[c]),
            "map50_95": _mean_valid(prec[:, :, c, 0]),
            "map50": _mean_valid(prec[0, :, c, 0]),
            "precision": float(prf["p_cls"][c]),
            "recall": float(prf["r_cls"][c]),
        }
        for c in range(nc)
    ]
    res.update(n_images=n_images, n_targets=len(g), n_preds=len(d), max_det=int(max_det))
    res["evaluator"] = evaluator_name()
    res["curves"] = ValCurves.compute(d_cls, d[:, 4], tp, n_gt)
    return res
