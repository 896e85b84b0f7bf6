"""Tiled inference: planted small objects are found by tiles and missed by the whole frame; the CLI sends the
tiles to the backend as batches; NMS and greedy non-maximum merging (NMM) against hand-worked cases."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.deploy.runtime_support import export_blob_onnx, planted_squares
from y9core.boxes import box_iou_matrix as box_iou
from y9deploy import Detections, Detector
from y9deploy.pipelines.predict.results import read_jsonl
from y9deploy.pipelines.tiling import (
    TileOptions,
    greedy_nmm,
    merge_detections,
    predict_tiled,
    tile_grid,
)
from y9deploy.pipelines.tiling.recall import matched_ground_truth, recall_at_iou
from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

HW = (1200, 1600)
N = 30


@pytest.fixture(scope="module")
def blob(tmp_path_factory) -> Path:
    return export_blob_onnx(tmp_path_factory.mktemp("blob") / "blob.onnx", imgsz=(320, 320))


@pytest.fixture(scope="module")
def planted():
    return planted_squares(HW, N, side=24, seed=3)


def test_tiles_find_planted_small_objects_the_full_frame_misses(blob, planted):
    frame, gt = planted
    cls = np.zeros(N, np.int64)
    with Detector(blob, conf=0.5) as det:
        full = det.predict(frame)
        assert recall_at_iou(full, gt, cls) <= 0.1  # 24 px squares become 5 px at 320 / 1600
        for merge in ("nms", "nmm"):
            tiled = predict_tiled(det, frame, overlap=0.2, include_full=False, merge=merge)
            assert recall_at_iou(tiled, gt, cls) == 1.0
            assert len(tiled) == N  # squares seen by two tiles are merged into one box
            best = np.nanmax(box_iou(tiled.xyxy, gt), 1)
            # NMS may keep the part of a square cut by a tile border (equal scores); NMM merges it into a whole box
            assert best.min() > (0.9 if merge == "nmm" else 0.6)
        both = predict_tiled(det, frame, overlap=0.2, include_full=True, merge="nmm")
        assert recall_at_iou(both, gt, cls) == 1.0 and len(both) == N


def test_cli_tile_sends_batches_to_the_backend(blob, planted, tmp_path, monkeypatch):
    from y9cli.app import app

    frame, gt = planted
    cv2.imwrite(str(tmp_path / "aerial.png"), frame)
    batches: list[int] = []
    infer = OnnxRuntimeBackend.infer

    def spy(self, blob_, extras=None):
        batches.append(int(blob_.shape[0]))
        return infer(self, blob_, extras)

    monkeypatch.setattr(OnnxRuntimeBackend, "infer", spy)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["predict", str(tmp_path / "aerial.png"), "-m", str(blob), "--conf", "0.5",
                                   "--tile", "320", "--overlap", "0.2", "--merge", "nmm", "--full-frame",
                                   "--project", str(tmp_path), "--name", "out", "--no-images"])  # fmt: skip
    assert res.exit_code == 0, res.output
    tiles = len(tile_grid(HW, 320, 0.2))
    assert sum(batches) == tiles + 1 and max(batches) > 1  # every tile and the whole frame, in batches
    [rec] = read_jsonl(out / "predictions.jsonl")
    d = Detections([r["xyxy"] for r in rec["detections"]], [r["confidence"] for r in rec["detections"]],
                   [r["class_id"] for r in rec["detections"]], ["square"])  # fmt: skip
    assert len(d) == N and recall_at_iou(d, gt, np.zeros(N)) == 1.0
    plain = CliRunner().invoke(app, ["predict", str(tmp_path / "aerial.png"), "-m", str(blob), "--conf", "0.5",
                                     "--project", str(tmp_path), "--name", "plain", "--no-images"])  # fmt: skip
    assert (
        plain.exit_code == 0
        and len(read_jsonl(tmp_path / "plain" / "predictions.jsonl")[0]["detections"]) <= 3
    )


def test_nmm_merges_greedily_and_nms_keeps_the_best():
    boxes = np.array([[0, 0, 10, 10], [4, 0, 14, 10], [9, 0, 19, 10], [100, 100, 110, 110]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    classes = np.array([0, 0, 0, 1])
    # IoU(A, B) = 60 / 140 = 0.43, IoU(B, C) = 0.43, IoU(A, C) = 10 / 190: A takes B, C stays (greedy, one pass)
    b, s, c = greedy_nmm(boxes, scores, classes, 0.4, None)
    np.testing.assert_allclose(b, [[0, 0, 14, 10], [9, 0, 19, 10], [100, 100, 110, 110]])
    np.testing.assert_allclose(s, [0.9, 0.7, 0.6])
    assert c.tolist() == [0, 0, 1]
    # intersection over the smaller box: a half box inside a whole one is merged at any IoU
    half = np.array([[0, 0, 10, 10], [0, 0, 5, 10]], np.float32)
    b, s, _ = greedy_nmm(half, np.array([0.6, 0.9], np.float32), np.zeros(2), 0.9, 0.8)
    np.testing.assert_allclose(b, [[0, 0, 10, 10]])
    np.testing.assert_allclose(s, [0.9])
    # agnostic: classes merge, the group keeps the best box's class
    b, _, c = greedy_nmm(boxes[:2], scores[:2], np.array([1, 0]), 0.4, None, agnostic=True)
    assert len(b) == 1 and c.tolist() == [1]
    # through merge_detections, NMS drops what NMM merges
    parts = [Detections(boxes[:2], scores[:2], [0, 0], ["a", "b"])]
    nms = merge_detections(parts, [(0, 0)], (50, 50), merge="nms", iou=0.4, ios=None)
    nmm = merge_detections(parts, [(0, 0)], (50, 50), merge="nmm", iou=0.4, ios=None)
    np.testing.assert_allclose(nms.xyxy, [[0, 0, 10, 10]])
    np.testing.assert_allclose(nmm.xyxy, [[0, 0, 14, 10]])
    with pytest.raises(ValueError, match="merge"):
        TileOptions(merge="wbf")
    with pytest.raises(ValueError, match="overlap"):
        TileOptions(overlap=1.5)


def test_recall_matching_is_one_to_one_and_per_class():
    gt = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], np.float32)
    # two detections on the first box: only one counts; a detection of the wrong class counts for nothing
    found = matched_ground_truth(np.array([[0, 0, 10, 10], [1, 0, 10, 10], [20, 20, 30, 30]]), np.array([0.9, 0.8, 0.7]),
                                 np.array([0, 0, 1]), gt, np.array([0, 0]))  # fmt: skip
    assert found.tolist() == [True, False]
    shifted = Detections([[5, 0, 15, 10]], [0.9], [0], ["a"])  # IoU 50 / 150 = 0.33
    assert recall_at_iou(shifted, gt[:1], np.zeros(1), iou=0.3) == 1.0
    assert recall_at_iou(shifted, gt[:1], np.zeros(1), iou=0.5) == 0.0
