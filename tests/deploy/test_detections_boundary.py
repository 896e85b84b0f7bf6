"""``Detections`` checks what it is given, at its boundary (the constructor, ``from_rows``, ``from_supervision``):
finite, non-inverted boxes, confidences in [0, 1], class ids >= 0 and covered by the names; repeated class names are
warned about once (issue 46)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from y9deploy import Detections

NAMES = ["cat", "dog", "bird"]
GOOD = [[10, 20, 30, 40]]


@pytest.mark.parametrize(
    "xyxy,conf,cls,names,words",
    [
        ([[np.nan, 20, 30, 40]], [0.5], [0], NAMES, "xyxy row 0 is [nan, 20, 30, 40]; expected finite"),
        ([[10, 20, np.inf, 40]], [0.5], [0], NAMES, "xyxy row 0 is [10, 20, inf, 40]; expected finite"),
        ([[1e300, 20, 30, 40]], [0.5], [0], NAMES, "expected finite"),  # inf once float32
        ([[30, 20, 10, 40]], [0.5], [0], NAMES, "row 0 is [30, 20, 10, 40], an inverted box; expected x1 <= x2"),
        ([[10, 40, 30, 20]], [0.5], [0], NAMES, "an inverted box; expected x1 <= x2 and y1 <= y2"),
        (GOOD, [7.0], [0], NAMES, "confidence row 0 is 7; expected a score in [0, 1]"),
        (GOOD, [-3.0], [0], NAMES, "confidence row 0 is -3; expected a score in [0, 1]"),
        (GOOD, [np.nan], [0], NAMES, "confidence row 0 is nan; expected a score in [0, 1]"),
        (GOOD, [0.5], [-1], NAMES, "class_id row 0 is -1; expected a class id >= 0"),
        (GOOD, [0.5], [-1], [], "class_id row 0 is -1; expected a class id >= 0"),
        (GOOD, [0.5], [3], NAMES, "class_id row 0 is 3, a class without a name; expected 0..2 (3 names)"),
        (GOOD, [0.5], [5], {0: "a", 2: "b"}, "class_id row 0 is 5, a class without a name; expected the ids 0, 2"),
    ],
)
def test_a_row_that_is_not_a_detection_is_one_sentence(xyxy, conf, cls, names, words):
    with pytest.raises(ValueError) as info:
        Detections(xyxy, conf, cls, names)
    message = str(info.value)
    assert words in message and "\n" not in message, message


def test_from_rows_is_checked_too():
    with pytest.raises(ValueError, match="confidence row 1 is 7"):
        Detections.from_rows(np.float32([[0, 0, 1, 1, 0.5, 0], [0, 0, 1, 1, 7, 0]]), NAMES)


def test_edges_are_detections():
    d = Detections([[5, 5, 5, 5]], [1.0], [2], NAMES)  # a point box, full confidence, the last class
    assert len(d) == 1 and d.class_names == ["bird"]
    assert len(Detections([[0, 0, 1, 1]], [0.0], [7], [])) == 1  # no names: any id >= 0


class _SV:
    """Enough of supervision's ``sv.Detections`` for ``from_supervision``."""

    def __init__(self, xyxy, confidence, class_id, data=None):
        self.xyxy, self.confidence, self.class_id = np.asarray(xyxy, float), np.asarray(confidence), np.asarray(class_id)
        self.data = data or {}


@pytest.mark.parametrize(
    "sv,names,words",
    [
        (_SV(GOOD, [0.5], [-1]), None, "class_id row 0 is -1"),
        (_SV([[np.nan, 0, 1, 1]], [0.5], [0]), None, "expected finite"),
        (_SV([[3, 0, 1, 1]], [0.5], [0]), None, "an inverted box"),
        (_SV(GOOD, [7.0], [0]), None, "confidence row 0 is 7"),
        (_SV(GOOD, [-3.0], [0]), None, "confidence row 0 is -3"),
        (_SV(GOOD + GOOD, [0.5, 0.5], [0, 4]), ["a", "b"], "class_id row 1 is 4, a class without a name"),
    ],
)
def test_from_supervision_is_checked(sv, names, words):
    with pytest.raises(ValueError, match=None) as info:
        Detections.from_supervision(sv, names)
    assert words in str(info.value), info.value


def test_nothing_invalid_reaches_to_coco():
    d = Detections.from_supervision(_SV(GOOD, [0.5], [1]), NAMES)
    json.loads(json.dumps(d.to_coco(1), allow_nan=False))


def test_repeated_class_names_are_warned_about_once():
    names = ["thing"] * 80
    with pytest.warns(UserWarning, match=r"the class names repeat 'thing' for classes 0, 1, 2, .*\(80 in all\)"):
        Detections(GOOD, [0.5], [3], names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Detections(GOOD, [0.5], [3], names)  # the same names again: no second warning
        Detections(GOOD, [0.5], [1], NAMES)  # distinct names: none
