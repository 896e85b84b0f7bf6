"""The validation report without a model (issue 35 item 1): synthetic detections through ``evaluate`` and
``write_val_report``; its curves against pycocotools, its matrix against hand-counted cases, and a machine without
matplotlib (the numbers still written, one sentence about the pictures)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from y9core.evaluation.confusion import confusion_matrix
from y9core.evaluation.metrics import evaluate
from y9core.evaluation.report import PICTURES, write_val_report
from y9core.evaluation.result import ValResult

pytest.importorskip("faster_coco_eval")
NAMES = ["a", "b", "c"]


def synthetic(seed: int = 0, images: int = 12):
    """Ground truth, and detections near it (some shifted, some wrong class, some spurious) with distinct scores."""
    rng = np.random.default_rng(seed)
    preds, targets = [], []
    for _ in range(images):
        n = int(rng.integers(0, 6))
        xy = rng.uniform(0, 300, (n, 2))
        wh = rng.uniform(10, 120, (n, 2))
        gt = np.c_[rng.integers(0, 3, n), xy, xy + wh]
        det = gt[:, 1:5] + rng.normal(0, 8, (n, 4))
        det = np.c_[np.minimum(det[:, :2], det[:, 2:]), np.maximum(det[:, :2], det[:, 2:])]  # x1 <= x2, as detectors
        cls = np.where(rng.random(n) < 0.8, gt[:, 0], rng.integers(0, 3, n))
        extra = rng.uniform(0, 300, (int(rng.integers(0, 4)), 2))
        det = np.r_[det, np.c_[extra, extra + 40]]
        cls = np.r_[cls, rng.integers(0, 3, len(extra))]
        score = rng.uniform(0.01, 1, len(det))
        order = np.argsort(-score)
        preds.append(np.c_[det, score, cls][order])
        targets.append(gt)
    return preds, targets


def result_of(preds, targets) -> ValResult:
    res = evaluate(preds, targets, names=NAMES)
    return ValResult.from_evaluation(res, preds, targets, [f"{i:06d}.jpg" for i in range(len(preds))], seconds=1.0,
                                     infer_seconds=0.5)  # fmt: skip


def test_pr_curves_equal_pycocotools_and_average_to_map50():
    cocoeval = pytest.importorskip("pycocotools.cocoeval")
    coco = pytest.importorskip("pycocotools.coco")
    preds, targets = synthetic()
    result = result_of(preds, targets)
    gt = coco.COCO()
    anns = [{"id": k + 1, "image_id": i, "category_id": int(r[0]), "bbox": [r[1], r[2], r[3] - r[1], r[4] - r[2]],
             "area": (r[3] - r[1]) * (r[4] - r[2]), "iscrowd": 0}
            for k, (i, r) in enumerate((i, r) for i, t in enumerate(targets) for r in t)]  # fmt: skip
    gt.dataset = {"images": [{"id": i} for i in range(len(targets))], "annotations": anns,
                  "categories": [{"id": c} for c in range(3)]}  # fmt: skip
    gt.createIndex()
    rows = [{"image_id": i, "category_id": int(p[5]), "bbox": [p[0], p[1], p[2] - p[0], p[3] - p[1]], "score": p[4]}
            for i, ps in enumerate(preds) for p in ps]  # fmt: skip
    ev = cocoeval.COCOeval(gt, gt.loadRes(rows), "bbox")
    ev.evaluate()
    ev.accumulate()
    for c in result.curves.classes:
        np.testing.assert_allclose(result.curves.pr[c], ev.eval["precision"][0, :, c, 0, 2], atol=1e-12)
        assert result.curves.pr[c].mean() == pytest.approx(result.per_class[c]["map50"], abs=1e-9)


def test_confusion_matrix_counts_pairs_misses_and_false_detections():
    targets = [np.array([[0, 0, 0, 10, 10], [1, 20, 20, 30, 30], [2, 50, 50, 60, 60]], float)]
    preds = [np.array([[0, 0, 10, 10, 0.9, 0],  # a hit
                       [20, 20, 30, 31, 0.8, 2],  # class 1 detected as 2
                       [0, 0, 10, 10, 0.7, 0],  # a duplicate: false detection
                       [80, 80, 90, 90, 0.6, 1],  # nothing there
                       [50, 50, 60, 60, 0.1, 2]])]  # below conf: class 2 missed  # fmt: skip
    m = confusion_matrix(preds, targets, 3, conf=0.25, iou=0.45)
    want = np.zeros((4, 4), int)
    want[0, 0] = want[1, 2] = want[2, 3] = want[3, 0] = want[3, 1] = 1
    np.testing.assert_array_equal(m.counts, want)
    np.testing.assert_allclose(m.normalized()[3], [0.5, 0.5, 0, 0])
    with pytest.raises(ValueError, match="same count"):
        confusion_matrix(preds, [], 3)


def test_without_matplotlib_the_numbers_are_written_and_one_sentence_says_why(tmp_path, monkeypatch):
    preds, targets = synthetic(1)
    result = result_of(preds, targets)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    report = write_val_report(result, tmp_path / "run", save_json=True)
    assert {p.name for p in report.files} == {"metrics.json", "per_class.csv", "confusion_matrix.csv", "curves.json",
                                              "predictions.json"}  # fmt: skip
    assert len(report.notes) == 1 and "matplotlib" in report.notes[0] and "metrics.json" in report.notes[0]
    assert not any((tmp_path / "run" / p).exists() for p in PICTURES)
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert doc["metrics"]["map50"] == pytest.approx(result.metrics["map50"])
    assert [c["name"] for c in doc["per_class"]] == NAMES
