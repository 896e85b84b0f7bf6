"""The files of a validation (issue 35 item 1): the embedded model over coco128's val split, every picture opened
and its size checked, and the curves and the confusion matrix recomputed from predictions.json: the PR curve and
the P/R/F1 points by pycocotools' own evaluation of that file, the matrix diagonal by a slow reference here."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import shared_path
from y9core.evaluation.coco_categories import COCO91_IDS
from y9core.evaluation.plots import CURVE_PX, MATRIX_PX
from y9core.evaluation.report import PICTURES

COCOeval = pytest.importorskip("pycocotools.cocoeval").COCOeval
COCO = pytest.importorskip("pycocotools.coco").COCO


@pytest.fixture(scope="module")
def report(embedded_val):
    """``y9 val --save-json`` of the embedded model over coco128's val split, run in an empty folder (the session's
    one run, ``embedded_val`` in conftest.py, which test_val_and_verify shares)."""
    res = embedded_val
    assert res.returncode == 0, res.stdout + res.stderr
    assert "16 images at 416x416, " in res.stdout  # the size it ran at (the trained one), said and recorded
    out = res.cwd / "runs" / "val"
    assert f"saved to {Path('runs') / 'val'}: metrics.json" in res.stdout
    names = {p.name for p in out.iterdir()}
    assert names >= {"metrics.json", "per_class.csv", "curves.json", "confusion_matrix.csv", "predictions.json",
                     *PICTURES}  # fmt: skip
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["validated"]["imgsz"] == [416, 416]
    return out, shared_path("datasets", "coco128", "data.yaml"), doc


def _ground_truth(data: Path) -> tuple[COCO, dict[int, np.ndarray]]:
    """pycocotools' ground truth of coco128's val labels, and per image id the boxes (class, x1, y1, x2, y2)."""
    images, anns, boxes = [], [], {}
    for img in sorted((data.parent / "images" / "val").glob("*.jpg")):
        h, w = cv2.imread(str(img)).shape[:2]
        label = data.parent / "labels" / "val" / f"{img.stem}.txt"
        rows = np.loadtxt(label, ndmin=2).reshape(-1, 5) if label.is_file() and label.stat().st_size else np.zeros((0, 5))
        x1, y1 = (rows[:, 1] - rows[:, 3] / 2) * w, (rows[:, 2] - rows[:, 4] / 2) * h
        bw, bh = rows[:, 3] * w, rows[:, 4] * h
        image_id = int(img.stem)
        images.append({"id": image_id, "width": w, "height": h})
        boxes[image_id] = np.c_[rows[:, 0], x1, y1, x1 + bw, y1 + bh]
        for c, x, y, ww, hh in zip(rows[:, 0], x1, y1, bw, bh):
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": int(c), "bbox": [x, y, ww, hh],
                         "area": ww * hh, "iscrowd": 0})  # fmt: skip
    gt = COCO()
    gt.dataset = {"images": images, "annotations": anns, "categories": [{"id": c} for c in range(80)]}
    gt.createIndex()
    return gt, boxes


def _predictions(out: Path) -> list[dict]:
    """predictions.json with each row's category id read back as the class id: a COCO-80 model's file carries COCO's
    own 91-class ids (issue 44 item 8), the ground truth here numbers the classes 0-79."""
    rows = json.loads((out / "predictions.json").read_text())
    assert rows and {r["category_id"] for r in rows} <= set(COCO91_IDS)
    back = {cat: k for k, cat in enumerate(COCO91_IDS)}
    return [{**r, "category_id": back[r["category_id"]]} for r in rows]


def test_pictures_have_their_sizes(report):
    out, _, _ = report
    for name in PICTURES:
        img = cv2.imread(str(out / name))
        assert img is not None, name
        w, h = MATRIX_PX if name.startswith("confusion") else CURVE_PX
        assert img.shape == (h, w, 3), name
        assert img.std() > 5, name  # something is drawn


def test_curves_equal_pycocotools_evaluation_of_predictions_json(report):
    out, data, doc = report
    gt, _ = _ground_truth(data)
    preds = _predictions(out)
    assert len(preds) >= doc["detections"] > 0 and doc["images"] == 16  # (metrics count after the max_det cut)
    ev = COCOeval(gt, gt.loadRes(preds), "bbox")
    ev.evaluate()
    ev.accumulate()
    curves = json.loads((out / "curves.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert curves["classes"]
    for name, row in curves["classes"].items():
        k = row["class"]
        coco_pr = ev.eval["precision"][0, :, k, 0, 2]  # IoU 0.50, every recall point, area all, maxDets 100
        np.testing.assert_allclose(row["pr"], coco_pr, atol=2e-6, err_msg=name)
        assert np.mean(row["pr"]) == pytest.approx(metrics["per_class"][k]["map50"], abs=1e-6)  # the curve's AP
    # P, R and F1 at one threshold for the class with the most boxes, from pycocotools' own matches at IoU 0.50
    k = max(metrics["per_class"], key=lambda c: c["n_gt"])["class"]
    flags, scores = [], []
    for e in ev.evalImgs:
        if e is not None and e["category_id"] == k and e["aRng"] == [0, 1e10] and e["maxDet"] == 100:
            flags += (e["dtMatches"][0] > 0).tolist()
            scores += list(e["dtScores"])
    flags, scores = np.array(flags), np.array(scores)
    grid = curves["confidence_points"]
    j = int(np.argmin(np.abs(np.array(grid) - 0.1)))
    above = scores >= grid[j]
    p = flags[above].sum() / max(above.sum(), 1)
    r = flags[above].sum() / metrics["per_class"][k]["n_gt"]
    row = curves["classes"][metrics["per_class"][k]["name"]]
    assert row["precision"][j] == pytest.approx(p, abs=2e-6) and row["recall"][j] == pytest.approx(r, abs=2e-6)
    assert row["f1"][j] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0, abs=2e-6)
    at50 = ev.eval["precision"][0, :, :, 0, 2]
    assert metrics["metrics"]["map50"] == pytest.approx(at50[at50 > -1].mean(), abs=1e-6)  # and the overall number
    assert metrics["evaluator"].startswith("faster-coco-eval")


def _slow_confusion_diagonal(preds: list[dict], boxes: dict[int, np.ndarray], conf: float, iou: float) -> np.ndarray:
    diag = np.zeros(80, np.int64)
    by_image: dict[int, list] = {i: [] for i in boxes}
    for p in preds:
        if p["score"] >= conf:
            by_image[p["image_id"]].append(p)
    for image_id, dets in by_image.items():
        pairs = []
        for g, (_, x1, y1, x2, y2) in enumerate(boxes[image_id]):
            for d, p in enumerate(dets):
                x, y, w, h = p["bbox"]
                iw, ih = max(0.0, min(x2, x + w) - max(x1, x)), max(0.0, min(y2, y + h) - max(y1, y))
                inter = iw * ih
                value = inter / ((x2 - x1) * (y2 - y1) + w * h - inter)
                if value >= iou:
                    pairs.append((-value, g, d))
        used_g, used_d = set(), set()
        for _, g, d in sorted(pairs):
            if g not in used_g and d not in used_d:
                used_g.add(g)
                used_d.add(d)
                if int(boxes[image_id][g][0]) == dets[d]["category_id"]:
                    diag[dets[d]["category_id"]] += 1
    return diag


def test_confusion_matrix_diagonal_from_predictions_json(report):
    out, data, _ = report
    _, boxes = _ground_truth(data)
    preds = _predictions(out)
    meta = json.loads((out / "metrics.json").read_text())["confusion_matrix"]
    with open(out / "confusion_matrix.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    counts = np.array([[int(v) for v in r[1:]] for r in rows[1:]])
    assert counts.shape == (81, 81) and rows[0][-1] == "background"
    np.testing.assert_array_equal(np.diag(counts)[:80], _slow_confusion_diagonal(preds, boxes, meta["conf"], meta["iou"]))
    assert np.diag(counts)[:80].sum() > 0
    n_gt = np.bincount(np.concatenate([b[:, 0] for b in boxes.values()]).astype(int), minlength=80)
    np.testing.assert_array_equal(counts[:80].sum(1), n_gt)  # every labelled box lands in its row once
    n_det = np.bincount([p["category_id"] for p in preds if p["score"] >= meta["conf"]], minlength=80)
    np.testing.assert_array_equal(counts[:, :80].sum(0), n_det)  # every detection above conf in its column once
