"""Pipelines around the Detector: tiled inference for large frames, inspection rules."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx, reference_nms
from y9deploy import Detections, Detector
from y9deploy.pipelines.inspection.frame_rules import Rule, inspect
from y9deploy.pipelines.tiling import merge_detections, predict_tiled, tile_grid


@pytest.mark.parametrize(
    "hw,tile,overlap", [((1080, 1920), 640, 0.2), ((500, 700), (96, 128), 0.25), ((300, 200), 640, 0.2)]
)
def test_tile_grid_covers_the_frame(hw, tile, overlap):
    tiles = tile_grid(hw, tile, overlap)
    covered = np.zeros(hw, bool)
    th, tw = (tile, tile) if isinstance(tile, int) else tile
    for x0, y0, x1, y1 in tiles:
        assert 0 <= x0 < x1 <= hw[1] and 0 <= y0 < y1 <= hw[0]
        assert x1 - x0 == min(tw, hw[1]) and y1 - y0 == min(th, hw[0])  # full-size tiles, edges aligned
        covered[y0:y1, x0:x1] = True
    assert covered.all()
    xs = sorted({t[0] for t in tiles})
    if len(xs) > 1:
        assert max(b - a for a, b in zip(xs, xs[1:])) <= int(tw * (1 - overlap))  # neighbours overlap enough
    with pytest.raises(ValueError, match="overlap"):
        tile_grid(hw, tile, 1.0)


def test_merge_drops_boxes_cut_by_a_tile_border():
    names = ["a", "b"]
    whole = Detections([[100, 100, 200, 200]], [0.9], [0], names)  # from tile 0 at (0, 0)
    cut = Detections([[0, 100, 40, 200]], [0.8], [0], names)  # the same object, cut, from tile 1 at (160, 0)
    other = Detections([[0, 100, 40, 200]], [0.7], [1], names)  # same place, another class: kept
    merged = merge_detections([whole, cut, other], [(0, 0), (160, 0), (160, 0)], (400, 400))
    assert len(merged) == 2 and merged.class_id.tolist() == [0, 1]
    np.testing.assert_allclose(merged.xyxy, [[100, 100, 200, 200], [160, 100, 200, 200]])
    kept = merge_detections(
        [whole, cut], [(0, 0), (160, 0)], (400, 400), ios=None
    )  # IoU 0.4 < 0.5: both stay
    assert len(kept) == 2
    assert len(merge_detections([Detections.empty(names)], [(0, 0)], (10, 10))) == 0


def test_predict_tiled_equals_tiles_shifted_and_merged(tmp_path):
    onnx = export_tiny_onnx(tmp_path / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True)
    frame = cv2.resize(cv2.imread(str(TEST_DATA / "000000000036.jpg")), (480, 300))
    with Detector(onnx, conf=0.6) as det:
        got = predict_tiled(det, frame, overlap=0.25, iou=0.5, ios=None, include_full=False)
        # reference: each tile on its own, boxes shifted, per-class greedy NMS one box at a time
        boxes, scores, classes = [], [], []
        for x0, y0, x1, y1 in tile_grid(frame.shape[:2], (96, 128), 0.25):
            d = det.predict(np.ascontiguousarray(frame[y0:y1, x0:x1]))
            boxes.append(d.xyxy + [x0, y0, x0, y0])
            scores.append(d.confidence)
            classes.append(d.class_id)
        boxes, scores, classes = np.concatenate(boxes), np.concatenate(scores), np.concatenate(classes)
        keep = []
        for c in np.unique(classes):
            idx = np.flatnonzero(classes == c)
            keep += idx[reference_nms(boxes[idx], scores[idx], 0.5)].tolist()
        assert len(got) == len(keep) > 20
        ref = np.column_stack([boxes[keep], scores[keep], classes[keep]])
        mine = np.column_stack([got.xyxy, got.confidence, got.class_id])
        np.testing.assert_allclose(mine[np.lexsort(mine.T[::-1])], ref[np.lexsort(ref.T[::-1])], atol=1e-4)
        with_full = predict_tiled(det, frame, overlap=0.25)
        assert len(with_full) > 0 and with_full.xyxy[:, 2].max() <= 480 and with_full.xyxy[:, 3].max() <= 300


def test_inspection_rules():
    names = ["scratch", "dent", "label"]
    dets = Detections([[10, 10, 20, 20], [100, 100, 140, 130], [150, 150, 400, 400], [105, 105, 108, 108]],
                      [0.9, 0.6, 0.95, 0.7], [0, 1, 2, 0], names)  # fmt: skip
    ok = inspect(dets, [Rule("weld", roi=(90, 90, 200, 200), classes=[0, 1], max_count=2)])
    assert ok.passed and ok.counts == {"weld": 2} and ok.reasons == []
    bad = inspect(dets, [Rule("weld", roi=(90, 90, 200, 200), classes=[0, 1], max_count=0),
                         Rule("anywhere", classes=[0], min_conf=0.8)])  # fmt: skip
    assert not bad.passed and bad.counts == {"weld": 2, "anywhere": 1}
    assert bad.reasons[0].startswith("weld: 2 detections (at most 0 allowed): dent 0.60, scratch 0.70")
    small = inspect(dets, [Rule("weld", roi=(90, 90, 200, 200), classes=[0, 1], min_area=20)])
    assert small.counts["weld"] == 1  # the 3x3 scratch is ignored
    # the label box's centre (275, 275) is outside, but a quarter of its area is inside (150..200)^2 / 250^2
    centre = inspect(dets, [Rule("r", roi=(90, 90, 200, 200), classes=[2])])
    overlap = inspect(dets, [Rule("r", roi=(90, 90, 200, 200), classes=[2], min_overlap=0.03)])
    assert centre.counts["r"] == 0 and overlap.counts["r"] == 1
    assert inspect(Detections.empty(names), [Rule("r")]).passed
    with pytest.raises(ValueError, match="empty"):
        Rule("r", roi=(10, 10, 5, 20))
    with pytest.raises(ValueError, match="repeat"):
        inspect(dets, [Rule("r"), Rule("r")])
    assert bad.to_dict()["counts"] == {"weld": 2, "anywhere": 1}
