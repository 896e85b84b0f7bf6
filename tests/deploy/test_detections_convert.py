"""Detections handed on (issue 35 item 5): COCO result rows checked by pycocotools itself, the round trip through
supervision's own ``sv.Detections`` (the real package), and ``annotate`` through the drawing module."""

from __future__ import annotations

import numpy as np
import pytest

from y9deploy.detections import Detections
from y9deploy.draw import class_color, draw_detections, label_text_color, line_width, relative_luminance

NAMES = ["person", "car", "dog"]


def sample() -> Detections:
    return Detections(
        xyxy=[[10.25, 20.5, 110.75, 220.125], [50, 60, 90, 100], [200, 10, 300, 80], [0, 0, 5, 5]],
        confidence=[0.9, 0.75, 0.5, 0.3],
        class_id=[0, 1, 0, 2],
        names=NAMES,
    )


def test_to_coco_rows_are_what_pycocotools_reads_back():
    coco_module = pytest.importorskip("pycocotools.coco")
    d = sample()
    rows = d.to_coco(42)
    gt = coco_module.COCO()
    gt.dataset = {"images": [{"id": 42, "width": 320, "height": 240}], "annotations": [],
                  "categories": [{"id": c, "name": n} for c, n in enumerate(NAMES)]}  # fmt: skip
    gt.createIndex()
    res = gt.loadRes(rows)  # the reference reader of the COCO results format
    anns = sorted(res.loadAnns(res.getAnnIds()), key=lambda a: a["id"])
    assert len(anns) == len(d)
    for a, box, score, cls in zip(anns, d.xyxy, d.confidence, d.class_id, strict=True):
        x, y, w, h = a["bbox"]
        np.testing.assert_allclose([x, y, x + w, y + h], box, atol=1e-4)
        assert a["image_id"] == 42 and a["category_id"] == cls and a["score"] == pytest.approx(score)
        assert a["area"] == pytest.approx(float((box[2] - box[0]) * (box[3] - box[1])), rel=1e-6)
    coco91 = d.to_coco(7, category_ids=[1, 3, 18])  # a list indexed by class id
    assert [r["category_id"] for r in coco91] == [1, 3, 1, 18]
    assert [r["category_id"] for r in d.to_coco(7, category_ids={0: 5, 1: 6, 2: 7})] == [5, 6, 5, 7]
    with pytest.raises(ValueError, match="no entry for class id 2"):
        d.to_coco(7, category_ids=[1, 3])
    assert Detections.empty(NAMES).to_coco(1) == []


def test_round_trip_through_supervision():
    sv = pytest.importorskip("supervision")
    d = sample()
    s = d.to_supervision()
    assert isinstance(s, sv.Detections) and len(s) == len(d)
    np.testing.assert_array_equal(s.xyxy, d.xyxy)
    np.testing.assert_array_equal(s.class_id, d.class_id)
    assert list(s.data["class_name"]) == d.class_names
    np.testing.assert_allclose(s.box_area, d.area)  # supervision's own arithmetic on the boxes
    kept = s[s.confidence > 0.6]  # supervision's own selection keeps the names beside the rows
    back = Detections.from_supervision(kept)
    ref = d[d.confidence > 0.6]
    np.testing.assert_array_equal(back.xyxy, ref.xyxy)
    np.testing.assert_array_equal(back.confidence, ref.confidence)
    np.testing.assert_array_equal(back.class_id, ref.class_id)
    assert back.class_names == ref.class_names
    full = Detections.from_supervision(s, names=NAMES)
    assert full.names == NAMES and full.class_names == d.class_names
    merged = sv.Detections.merge([s, sv.Detections.empty()])  # a detector's output merged by supervision
    assert len(Detections.from_supervision(merged)) == len(d)


def test_from_supervision_needs_scores_and_classes():
    sv = pytest.importorskip("supervision")
    boxes = np.array([[0, 0, 10, 10]], np.float32)
    plain = Detections.from_supervision(sv.Detections(boxes, confidence=np.array([0.5]), class_id=np.array([4])))
    assert plain.class_names == ["4"]  # no names: the id stands in
    with pytest.raises(ValueError, match="no confidence"):
        Detections.from_supervision(sv.Detections(boxes, class_id=np.array([0])))
    with pytest.raises(ValueError, match="no class_id"):
        Detections.from_supervision(sv.Detections(boxes, confidence=np.array([0.5])))


def test_annotate_is_the_drawing_module():
    frame = np.full((240, 320, 3), 40, np.uint8)
    d = sample()
    np.testing.assert_array_equal(d.annotate(frame), draw_detections(frame, d))
    np.testing.assert_array_equal(d.annotate(frame, thickness=5), draw_detections(frame, d, thickness=5))
    assert not np.array_equal(d.annotate(frame), d.annotate(frame, show_labels=False))


def test_the_palette_is_legible():
    """Label text reaches WCAG AA contrast (4.5:1) on every class colour; lines grow with the frame."""
    for c in range(80):
        bg, fg = class_color(c), label_text_color(class_color(c))
        hi, lo = sorted((relative_luminance(bg), relative_luminance(fg)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, c
    assert relative_luminance((255, 255, 255)) == pytest.approx(1.0) and relative_luminance((0, 0, 0)) == 0.0
    assert line_width((240, 320)) == 2 and line_width((2160, 3840)) > line_width((1080, 1920)) > 2
    big = np.full((2160, 3840, 3), 40, np.uint8)
    d = Detections([[100, 100, 1000, 1000]], [0.9], [0], NAMES)
    drawn = d.annotate(big)
    w = line_width(big.shape[:2])
    assert (drawn[500, 100 - w // 2 : 100 + w // 2] == class_color(0)).all()  # a line as wide as the rule says
