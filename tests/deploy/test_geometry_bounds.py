"""Geometry options (count lines, zones, inspection polygons) hold finite coordinates within +-MAX_COORD pixels, each
refusal one short sentence; a zone or line wholly outside the frame is warned about once (issue 46)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from y9core.errors import RulesFileError
from y9core.model_facts import FactsWarning
from y9deploy import Detections
from y9deploy.tracking.counting import CountLine, Zone
from y9deploy.tracking.regions import MAX_COORD, MAX_POLYGON_POINTS, Region


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda: CountLine.parse("0,120,inf,120"), "count line '0,120,inf,120' has the coordinate inf (number 3)"),
        (lambda: CountLine.parse("0,1e300,320,120"), "has the coordinate 1e+300 (number 2)"),
        (lambda: CountLine("l", (0, 0), (float("nan"), 5)), "line 'l' has the coordinate nan"),
        (lambda: Zone.parse("0,0,1e300,0,0,1e300"), "zone '0,0,1e300,0,0,1e300' has the coordinate 1e+300"),
        (lambda: Zone.parse("0,0,10,0,10,-inf"), "has the coordinate -inf"),
        (lambda: Region("r", rect=(0, 0, 2e6, 10)), "region 'r': rect has the coordinate 2e+06"),
        (lambda: Region("r", polygon=[[0, 0], [10, 0], [10, np.inf]]), "region 'r': polygon has the coordinate inf"),
    ],
)
def test_a_coordinate_beyond_the_bound_is_one_sentence(make, words):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning first
        with pytest.raises(ValueError) as info:
            make()
    message = str(info.value)
    assert words in message and f"expected finite frame pixels within +-{MAX_COORD:,}" in message, message


def test_a_zone_over_the_point_limit_is_not_called_zero_area_nor_echoed():
    text = ",".join(["1,2"] * 50_000)  # 200 kB of text
    with pytest.raises(ValueError) as info:
        Zone.parse(text)
    message = str(info.value)
    assert f"polygon has 50,000 points; expected 3 to {MAX_POLYGON_POINTS:,}" in message
    assert "zero area" not in message and len(message) < 300, message[:400]


def test_a_zero_area_zone_still_says_so():
    with pytest.raises(ValueError, match="zone '0,0,10,0,20,0': polygon has zero area"):
        Zone.parse("0,0,10,0,20,0")


def test_an_inspection_polygon_beyond_the_bound_names_the_file_and_line(tmp_path):
    from y9deploy.pipelines.inspection.rules_file import load_rules

    rules = tmp_path / "rules.yaml"
    rules.write_text("regions:\n  r: {polygon: [[0, 0], [1.0e+300, 0], [10, .inf]]}\nrules:\n  - {name: a, max: 0}\n")
    with pytest.raises(RulesFileError) as info:
        load_rules(rules)
    message = str(info.value)
    assert f"{rules}:2: regions.r.polygon[1][0] is 1e+300; expected a number in [-1e+06, 1e+06]" in message, message


def test_a_zone_or_line_outside_the_frame_is_warned_about_once():
    from y9deploy.tracking.source_tracking import SourceTracking, TrackOptions

    options = TrackOptions("bytetrack", (CountLine.parse("0,100,640,100"),),
                           (Zone.parse("2000,2000,3000,2000,3000,3000", "far"),))  # fmt: skip
    run = SourceTracking(options, fps=30)
    frame = np.zeros((480, 640, 3), np.uint8)
    with pytest.warns(FactsWarning, match=r"zone 'far' lies wholly outside the 640x480 frame") as caught:
        run.step(Detections.empty(), 0.0, frame)
    assert len(caught) == 1  # the line crosses the frame: no word about it
    with warnings.catch_warnings():
        warnings.simplefilter("error", FactsWarning)
        run.step(Detections.empty(), 0.1, frame)
