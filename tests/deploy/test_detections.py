"""Detections (validation, selection, export) and draw_detections (pixels really drawn, frame untouched)."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from y9deploy.detections import Detections
from y9deploy.draw import class_color, draw_detections

NAMES = ["person", "car", "dog"]


def sample() -> Detections:
    return Detections(
        xyxy=[[10, 20, 110, 220], [50, 60, 90, 100], [200, 10, 300, 80], [0, 0, 5, 5]],
        confidence=[0.9, 0.75, 0.5, 0.3],
        class_id=[0, 1, 0, 2],
        names=NAMES,
    )


def test_construction_converts_dtypes_and_validates_lengths():
    d = sample()
    assert len(d) == 4
    assert d.xyxy.dtype == np.float32 and d.xyxy.shape == (4, 4) and d.xyxy.flags.c_contiguous
    assert d.confidence.dtype == np.float32 and d.class_id.dtype == np.int64
    assert d.class_names == ["person", "car", "person", "dog"]
    np.testing.assert_allclose(d.area, [100 * 200, 40 * 40, 100 * 70, 25])
    with pytest.raises(ValueError, match=r"confidence has shape \(3,\); expected \(4,\)"):
        Detections(d.xyxy, d.confidence[:3], d.class_id, NAMES)
    with pytest.raises(ValueError, match="class_id has shape"):
        Detections(d.xyxy, d.confidence, d.class_id[:, None], NAMES)
    with pytest.raises(ValueError, match="xyxy has shape"):
        Detections(np.zeros((4, 5)), d.confidence, d.class_id, NAMES)
    with pytest.raises(TypeError, match="dtype"):
        Detections(np.array([["a"] * 4] * 4), d.confidence, d.class_id, NAMES)
    with pytest.raises(ValueError, match="non-integer"):
        Detections(d.xyxy, d.confidence, [0, 1.5, 0, 2], NAMES)
    with pytest.raises(TypeError, match="names"):
        Detections(d.xyxy, d.confidence, d.class_id, "person")
    with pytest.raises(TypeError, match="names"):
        Detections(d.xyxy, d.confidence, d.class_id, {"0": "person"})
    assert Detections(d.xyxy, d.confidence, np.float32([0, 1, 0, 2]), NAMES).class_id.tolist() == [0, 1, 0, 2]


def test_selection_by_mask_index_slice_and_indices_returns_new_detections():
    d = sample()
    high = d[d.confidence > 0.6]
    assert isinstance(high, Detections) and len(high) == 2 and high.names == NAMES
    np.testing.assert_array_equal(high.xyxy, d.xyxy[:2])
    people = d[d.class_id == 0]
    assert people.confidence.tolist() == pytest.approx([0.9, 0.5])
    one = d[-1]
    assert len(one) == 1 and one.class_id.tolist() == [2]
    assert d[1:3].class_id.tolist() == [1, 0]
    assert d[[3, 0]].confidence.tolist() == pytest.approx([0.3, 0.9])
    assert len(d[np.zeros(4, bool)]) == 0
    # Selections are copies for masks/indices: editing one leaves the original alone.
    sel = d[[0]]
    sel.xyxy[0, 0] = -1
    assert d.xyxy[0, 0] == 10
    with pytest.raises(IndexError, match="out of range"):
        d[4]
    with pytest.raises(IndexError, match="boolean mask has shape"):
        d[np.ones(3, bool)]
    rows = list(d)
    assert len(rows) == 4 and rows[1][2] == 1 and rows[1][1] == pytest.approx(0.75)


def test_empty_from_rows_and_json_round_trip():
    e = Detections.empty(NAMES)
    assert len(e) == 0 and e.xyxy.shape == (0, 4) and e.to_dict() == {"detections": [], "names": NAMES}
    rows = np.float32([[1, 2, 3, 4, 0.5, 2], [5, 6, 7, 8, 0.25, 7]])
    d = Detections.from_rows(rows, {2: "dog", 7: "truck"})
    assert d.class_id.tolist() == [2, 7] and d.class_names == ["dog", "truck"]
    data = json.loads(d.to_json())
    assert data["names"] == {"2": "dog", "7": "truck"}
    assert data["detections"][1] == {
        "xyxy": [5.0, 6.0, 7.0, 8.0],
        "confidence": 0.25,
        "class_id": 7,
        "class_name": "truck",
    }
    with pytest.raises(ValueError, match=r"class_id row 0 is 2, a class without a name; expected 0\.\.0 \(1 names\)"):
        Detections.from_rows(rows, ["a"])  # fewer names than classes (issue 46)
    with pytest.raises(ValueError, match="rows has shape"):
        Detections.from_rows(np.zeros((2, 5)), NAMES)
    assert len(Detections([], [], [], NAMES)) == 0


def test_draw_detections_draws_on_a_copy_with_a_stable_colour_per_class():
    frame = np.full((240, 320, 3), 40, np.uint8)
    before = frame.copy()
    d = sample()
    out = draw_detections(frame, d)
    np.testing.assert_array_equal(frame, before)  # input untouched
    assert out.shape == frame.shape and out.dtype == np.uint8
    # The left edge of box 0 (class 0) is drawn in class 0's colour; box 1 (class 1) in class 1's colour.
    assert tuple(out[120, 10]) == class_color(0)
    assert tuple(out[80, 90]) == class_color(1)
    assert class_color(0) != class_color(1) and class_color(5) == class_color(5)
    # The middle of a box is not painted.
    assert tuple(out[150, 60]) == (40, 40, 40)
    # Labels: text drawn above box 0 differs from a drawing without labels.
    bare = draw_detections(frame, d, show_labels=False, show_scores=False)
    assert not np.array_equal(out, bare)
    assert np.array_equal(bare[150:, 150:], out[150:, 150:])  # no label text down there
    # Nothing to draw -> an equal copy.
    empty = draw_detections(frame, Detections.empty(NAMES))
    assert empty is not frame and np.array_equal(empty, frame)
    with pytest.raises(ValueError, match="grayscale"):
        draw_detections(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), d)
    with pytest.raises(TypeError, match="Detections"):
        draw_detections(frame, [[0, 0, 1, 1]])


def test_class_colours_are_distinct_for_the_first_twenty_classes():
    colours = [class_color(i) for i in range(20)]
    assert len(set(colours)) == 20
    assert all(0 <= v <= 255 for c in colours for v in c)
