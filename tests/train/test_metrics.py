"""y9train.metrics.evaluate against pycocotools' COCOeval run here on the same detections."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest

from tests.conftest import shared_path
from y9core.evaluation.metrics import evaluate, match_at_iou

pycocotools = pytest.importorskip("pycocotools")
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402

TOL = 2e-3  # the contract: equal to pycocotools to 2e-3


def _jittered_detections(rng, targets, nc, *, hw=(640, 640), fp_rate=3.0, miss=0.15, ties=False):
    """Realistic detections: jittered copies of the boxes (some with the wrong class, some twice), misses,
    false positives anywhere, random scores (rounded to 2 decimals when ``ties`` to create equal scores)."""
    h, w = hw
    preds = []
    for t in targets:
        rows = []
        for c, x1, y1, x2, y2 in t:
            if rng.random() < miss:
                continue
            bw, bh = x2 - x1, y2 - y1
            for _ in range(1 + int(rng.random() < 0.2)):  # sometimes a duplicate
                j = rng.normal(0.0, 0.12, 4) * [bw, bh, bw, bh]
                cc = c if rng.random() > 0.1 else rng.integers(nc)
                s = rng.beta(4, 2)
                rows.append([x1 + j[0], y1 + j[1], x2 + j[2], y2 + j[3], s, cc])
        for _ in range(rng.poisson(fp_rate)):
            bw, bh = np.exp(rng.uniform(np.log(4), np.log(0.8 * min(h, w)), 2))
            x1, y1 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            rows.append([x1, y1, x1 + bw, y1 + bh, rng.beta(2, 4), rng.integers(nc)])
        p = np.array(rows, dtype=np.float32).reshape(-1, 6)
        if ties:
            p[:, 4] = np.round(p[:, 4], 2)
        preds.append(p)
    return preds


def _random_targets(rng, n_images, nc, hw=(640, 640)):
    """Ground truth over all COCO size ranges (side lengths log-uniform in 3..500 px), some images empty."""
    h, w = hw
    targets = []
    for _ in range(n_images):
        n = 0 if rng.random() < 0.1 else rng.integers(1, 15)
        bw, bh = np.exp(rng.uniform(np.log(3), np.log(500), (2, n)))
        x1, y1 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
        c = rng.integers(nc, size=n)
        targets.append(np.stack([c, x1, y1, x1 + bw, y1 + bh], 1).astype(np.float32).reshape(-1, 5))
    return targets


def _pycocotools(preds, targets, nc, max_dets=(1, 10, 100)):
    """COCOeval on the same data: (stats, evalImgs, precision). GT area = box area w*h."""
    images = [{"id": i + 1, "height": 640, "width": 640} for i in range(len(targets))]
    anns = []
    for i, t in enumerate(targets):
        for c, x1, y1, x2, y2 in t.astype(np.float64):
            w, h = x2 - x1, y2 - y1
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": int(c) + 1,
                         "bbox": [x1, y1, w, h], "area": w * h, "iscrowd": 0})  # fmt: skip
    dts = [
        {"image_id": i + 1, "category_id": int(c) + 1, "bbox": [x1, y1, x2 - x1, y2 - y1], "score": s}
        for i, p in enumerate(preds)
        for x1, y1, x2, y2, s, c in p.astype(np.float64)
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"images": images, "annotations": anns, "categories": [{"id": c + 1} for c in range(nc)]}
        gt.createIndex()
        dt = gt.loadRes(dts)
        ev = COCOeval(gt, dt, "bbox")
        ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def _coco_summary(ev):
    """COCOeval's summary numbers; its own summarize() when maxDets is the default (it reads maxDets=100),
    else the same means computed from its precision array at the largest maxDets. -1 = undefined."""
    if ev.params.maxDets == [1, 10, 100]:
        return ev.stats[:6]
    prec = ev.eval["precision"][..., -1]  # [T, R, K, area]

    def mean(x):
        return x[x > -1].mean() if (x > -1).any() else -1

    return [mean(prec[..., 0]), mean(prec[0, ..., 0]), mean(prec[5, ..., 0])] + [
        mean(prec[..., a]) for a in (1, 2, 3)
    ]


def _assert_matches_pycocotools(res, ev):
    """mAP50-95, mAP50, mAP75, AP small/medium/large equal COCOeval's (-1 there = nan here)."""
    keys = ("map50_95", "map50", "map75", "map_small", "map_medium", "map_large")
    for key, ref in zip(keys, _coco_summary(ev), strict=True):
        if ref == -1:
            assert math.isnan(res[key]), key
        else:
            assert res[key] == pytest.approx(ref, abs=TOL), (key, res[key], ref)


def test_random_detections_equal_pycocotools():
    rng = np.random.default_rng(0)
    nc = 6
    targets = _random_targets(rng, 120, nc)
    preds = _jittered_detections(rng, targets, nc, ties=True)
    res = evaluate(preds, targets, nc=nc)
    ev = _pycocotools(preds, targets, nc)
    _assert_matches_pycocotools(res, ev)
    # realistic: far from trivial values, all area ranges populated
    assert 0.2 < res["map50_95"] < 0.9 and res["map50"] > res["map50_95"]
    assert all(not math.isnan(res[k]) for k in ("map_small", "map_medium", "map_large"))
    # per class AP = COCO's precision array averaged per class (area all, maxDets 100)
    prec = ev.eval["precision"][:, :, :, 0, -1]
    for c, row in enumerate(res["per_class"]):
        p = prec[:, :, c]
        assert row["map50_95"] == pytest.approx(p[p > -1].mean(), abs=TOL)
        assert row["map50"] == pytest.approx(p[0][p[0] > -1].mean(), abs=TOL)
        assert row["n_gt"] == sum(int((t[:, 0] == c).sum()) for t in targets)
    assert res["fitness"] == pytest.approx(0.1 * res["map50"] + 0.9 * res["map50_95"])


def test_max_det_is_per_image_and_class_like_coco():
    """One image with 150 detections of one class: only the 100 best count with maxDets=100, all with 300."""
    rng = np.random.default_rng(1)
    nc = 2
    targets = _random_targets(rng, 20, nc)
    targets[0] = np.array([[0, 10 + 4 * k, 10, 30 + 4 * k, 40] for k in range(130)], dtype=np.float32)
    preds = _jittered_detections(rng, targets, nc, miss=0.0)
    assert (preds[0][:, 5] == 0).sum() > 100
    for max_det in (100, 300):
        res = evaluate(preds, targets, nc=nc, max_det=max_det)
        ev = _pycocotools(preds, targets, nc, max_dets=(1, 10, max_det))
        _assert_matches_pycocotools(res, ev)
    assert evaluate(preds, targets, nc=nc, max_det=300)["map50"] > evaluate(preds, targets, nc=nc)["map50"]


def test_iou50_matching_and_best_f1_against_pycocotools_matches():
    rng = np.random.default_rng(2)
    nc = 4
    targets = _random_targets(rng, 60, nc)
    preds = _jittered_detections(rng, targets, nc, ties=True)
    ev = _pycocotools(preds, targets, nc)
    # detection ids of pycocotools are the 1-based row numbers of the concatenated detections
    ref_tp = np.zeros(sum(len(p) for p in preds), dtype=bool)
    for e in ev.evalImgs:
        if e is not None and e["aRng"] == [0, 1e10] and e["maxDet"] == 100:
            ids = np.asarray(e["dtIds"], dtype=np.int64)
            ref_tp[ids[e["dtMatches"][0] > 0] - 1] = True
    d = np.concatenate(preds).astype(np.float64)
    g = np.concatenate(targets).astype(np.float64)
    d_img = np.repeat(np.arange(len(preds)), [len(p) for p in preds])
    g_img = np.repeat(np.arange(len(targets)), [len(t) for t in targets])
    d_xywh = np.c_[d[:, :2], d[:, 2:4] - d[:, :2]]
    g_xywh = np.c_[g[:, 1:3], g[:, 3:5] - g[:, 1:3]]
    tp = match_at_iou(d_img * nc + d[:, 5].astype(int), d[:, 4], d_xywh, g_img * nc + g[:, 0].astype(int),
                      g_xywh, 0.5)  # fmt: skip
    assert tp.sum() > 100 and np.array_equal(tp, ref_tp)

    # best mean-F1 threshold by a direct sweep over every distinct score
    res = evaluate(preds, targets, nc=nc)
    n_gt = np.bincount(g[:, 0].astype(int), minlength=nc)
    best = None
    for t in np.unique(d[:, 4]):
        ps, rs, fs = [], [], []
        for c in range(nc):
            above = (d[:, 5] == c) & (d[:, 4] >= t)
            k = int(ref_tp[above].sum())
            p = k / above.sum() if above.sum() else 0.0
            r = k / n_gt[c]
            ps.append(p), rs.append(r), fs.append(2 * p * r / (p + r) if p + r else 0.0)
        if best is None or np.mean(fs) > best[0]:
            best = (np.mean(fs), np.mean(ps), np.mean(rs), t)
    assert (res["f1"], res["precision"], res["recall"], res["conf"]) == pytest.approx(best, abs=1e-12)
    assert 0.3 < res["precision"] < 1 and 0.3 < res["recall"] < 1


def _coco128_targets():
    """Real COCO labels (coco128 train and val) in pixels of their images."""
    import cv2

    root = shared_path("datasets", "coco128")
    targets = []
    for split in ("train", "val"):
        for img in sorted((root / "images" / split).glob("*.jpg")):
            h, w = cv2.imread(str(img)).shape[:2]
            lab = root / "labels" / split / (img.stem + ".txt")
            rows = np.loadtxt(lab, ndmin=2) if lab.exists() else np.zeros((0, 5))
            c, cx, cy, bw, bh = rows.T
            targets.append(np.stack([c, (cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w,
                                     (cy + bh / 2) * h], 1).astype(np.float32))  # fmt: skip
    return targets


def test_real_coco128_labels_equal_pycocotools():
    targets = _coco128_targets()
    assert len(targets) == 128 and sum(len(t) for t in targets) > 900
    rng = np.random.default_rng(3)
    preds = _jittered_detections(rng, targets, 80)
    res = evaluate(preds, targets, nc=80)
    ev = _pycocotools(preds, targets, 80)
    _assert_matches_pycocotools(res, ev)
    assert 0.2 < res["map50_95"] < 0.9


def test_perfect_empty_and_missing_cases():
    targets = [np.array([[0, 10, 10, 20, 20], [1, 50, 50, 200, 150]], dtype=np.float32), np.zeros((0, 5))]
    perfect = [np.array([[10, 10, 20, 20, 0.9, 0], [50, 50, 200, 150, 0.8, 1]]), np.zeros((0, 6))]
    res = evaluate(perfect, targets, nc=3, names=["a", "b", "c"])
    assert res["map50_95"] == pytest.approx(1.0) and res["map_small"] == pytest.approx(1.0)
    assert math.isnan(res["map_medium"])  # no medium ground truth: COCO's -1 becomes nan
    assert (res["precision"], res["recall"], res["f1"]) == (1.0, 1.0, 1.0)
    assert res["per_class"][2]["name"] == "c" and math.isnan(res["per_class"][2]["map50"])
    nothing = evaluate([np.zeros((0, 6)), np.zeros((0, 6))], targets, nc=3)
    assert nothing["map50_95"] == 0.0 and nothing["recall"] == 0.0


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="preds has 1 images but targets has 2"):
        evaluate([np.zeros((0, 6))], [np.zeros((0, 5))] * 2)
    with pytest.raises(ValueError, match=r"preds\[0\] has shape \(3, 5\)"):
        evaluate([np.zeros((3, 5))], [np.zeros((0, 5))])
    with pytest.raises(ValueError, match=r"targets holds class 7; expected integers in \[0, 3\)"):
        evaluate([np.zeros((0, 6))], [np.array([[7, 0, 0, 5, 5]])], nc=3)
    with pytest.raises(ValueError, match=r"targets\[1\] holds a box with x2 < x1"):
        evaluate([np.zeros((0, 6))] * 2, [np.zeros((0, 5)), np.array([[0, 9, 0, 5, 5]])], nc=3)
