"""y9 inspect: regions (rects, polygons), per-class thresholds, count rules, the rules file, the audit log."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.deploy.fixed_onnx import crafted_frame, fixed_boxes_onnx
from y9core.errors import RulesFileError
from y9deploy import Detections
from y9deploy.pipelines.inspection.frame_rules import ClassThreshold, Rule, Thresholds, inspect
from y9deploy.pipelines.inspection.rules_file import load_rules
from y9deploy.tracking.regions import Region

REPO = Path(__file__).resolve().parents[2]
NAMES = ["scratch", "screw"]
# anchors of the fixed model (cx, cy, w, h in the 64x64 input = frame pixels)
BOXES = [
    [12, 40, 8, 8],  # 0: inside rect "left"
    [48, 40, 16, 16],  # 1: inside the triangle "corner"
    [40, 56, 8, 8],  # 2: inside the triangle's bounding box, outside the triangle
    [12, 56, 3, 3],  # 3: inside "left", area 9
    [58, 30, 8, 8],  # 4: inside the triangle
]
RULES = """\
version: 1
thresholds:
  default: {min_conf: 0.3}
  scratch: {min_conf: 0.5, min_area: 20}
regions:
  left: {rect: [0, 20, 30, 64]}
  corner: {polygon: [[32, 20], [64, 20], [64, 64]]}
rules:
  - {name: no scratch on the left, region: left, classes: [scratch], max: 0}
  - name: one screw in the corner
    region: corner
    classes: [screw]
    min: 1
    max: 1
"""
# item -> (scores {(class, anchor): score}, verdict, reason prefixes); the table of docs/inspection.md
CASES = {
    "01_good.png": ({(1, 1): 0.8}, "pass", []),
    "02_scratch_left.png": ({(0, 0): 0.9, (1, 1): 0.8}, "fail", ["no scratch on the left: 1 detection (at most 0"]),
    "03_weak_scratch.png": ({(0, 0): 0.4, (1, 1): 0.8}, "pass", []),
    "04_tiny_scratch.png": ({(0, 3): 0.9, (1, 1): 0.8}, "pass", []),
    "05_no_screw.png": ({}, "fail", ["one screw in the corner: 0 detections (at least 1 required)"]),
    "06_screw_outside_polygon.png": ({(1, 2): 0.8}, "fail", ["one screw in the corner: 0 detections"]),
    "07_two_screws.png": ({(1, 1): 0.8, (1, 4): 0.7}, "fail", ["one screw in the corner: 2 detections (at most 1"]),
    "08_weak_screw.png": ({(1, 1): 0.2}, "fail", ["one screw in the corner: 0 detections"]),
    "09_both_wrong.png": ({(0, 0): 0.6}, "fail", ["no scratch on the left", "one screw in the corner"]),
}  # fmt: skip


# ------------------------------------------------------------------------------------------------ geometry
def test_polygon_membership_and_overlap_against_opencv():
    poly = np.array([[10, 10], [90, 10], [90, 90], [50, 40], [10, 90]], np.float64)  # concave (a notch)
    region = Region("notch", polygon=poly)
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 100, (500, 2))
    ref = np.array(
        [cv2.pointPolygonTest(poly.astype(np.float32), (float(x), float(y)), True) for x, y in pts]
    )
    clear = np.abs(ref) > 1e-3
    np.testing.assert_array_equal(region.contains_points(pts)[clear], ref[clear] > 0)
    # overlap fraction vs a 10x rasterisation of the polygon by OpenCV
    scale = 10
    mask = np.zeros((100 * scale, 100 * scale), np.uint8)
    cv2.fillPoly(mask, [np.round(poly * scale).astype(np.int32)], 1)
    boxes = np.array([[0, 0, 100, 100], [40, 30, 60, 60], [0, 0, 20, 20], [45, 50, 55, 95], [95, 95, 99, 99]])
    got = region.overlap_fraction(boxes)
    want = [mask[y1 * scale:y2 * scale, x1 * scale:x2 * scale].mean() for x1, y1, x2, y2 in boxes]  # fmt: skip
    np.testing.assert_allclose(got, want, atol=0.01)
    assert got[-1] == 0 and got[0] == pytest.approx(cv2.contourArea(poly.astype(np.float32)) / 1e4)
    with pytest.raises(ValueError, match="zero area"):
        Region("line", polygon=[[0, 0], [1, 1], [2, 2]])


def test_thresholds_and_count_rules_on_detections():
    dets = Detections(
        [[8, 36, 16, 44], [40, 32, 56, 48], [54, 26, 62, 34], [11, 55, 14, 58], [0, 0, 64, 10]],
        [0.9, 0.8, 0.45, 0.95, 0.35], [0, 1, 1, 0, 1], NAMES,
    )  # fmt: skip
    th = Thresholds.of({0: ClassThreshold(min_conf=0.5, min_area=20)}, ClassThreshold(min_conf=0.4))
    np.testing.assert_array_equal(th.keep(dets), [True, True, True, False, False])
    assert th.lowest_conf == 0.4
    tri = [(32, 20), (64, 20), (64, 64)]
    rules = [Rule("screws", polygon=tri, classes=[1], min_count=1, max_count=1), Rule("all", max_count=None)]
    r = inspect(dets, rules, th)
    assert not r.passed and r.counts == {"screws": 2, "all": 3} and len(r.kept) == 3
    assert r.reasons == ["screws: 2 detections (at most 1 allowed): screw 0.80, screw 0.45."]
    r = inspect(dets, [Rule("four", polygon=tri, classes=[1], min_count=4, max_count=None)], th)
    assert r.reasons == ["four: 2 detections (at least 4 required): screw 0.80, screw 0.45."]
    assert inspect(dets, [Rule("screws", polygon=tri, classes=[1], min_count=2, max_count=2)], th).passed
    with pytest.raises(ValueError, match="above max_count"):
        Rule("r", min_count=2, max_count=1)
    with pytest.raises(ValueError, match="not both"):
        Rule("r", roi=(0, 0, 1, 1), polygon=tri)


# ------------------------------------------------------------------------------------------------ rules file
def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_rules_file_loads_and_binds(tmp_path):
    rs = load_rules(write(tmp_path, RULES))
    rules, th = rs.bind(NAMES)
    assert [r.name for r in rules] == ["no scratch on the left", "one screw in the corner"]
    assert rules[0].classes == [0] and (rules[0].min_count, rules[0].max_count) == (0, 0)
    assert rules[1].region.polygon.shape == (3, 2) and (rules[1].min_count, rules[1].max_count) == (1, 1)
    assert th.default == ClassThreshold(min_conf=0.3)
    assert th.per_class == {0: ClassThreshold(min_conf=0.5, min_area=20)}
    # unlisted keys of a class inherit the default; no default min_conf: the Detector's 0.25
    rs = load_rules(
        write(
            tmp_path,
            "thresholds:\n  default: {min_area: 5}\n  1: {min_conf: 0.6}\nrules:\n  - {name: a, max: 3}\n",
        )
    )
    rules, th = rs.bind(NAMES)
    assert th.default == ClassThreshold(0.25, 5) and th.per_class == {1: ClassThreshold(0.6, 5)}
    assert rules[0].region is None and rules[0].classes is None and rules[0].max_count == 3


BAD = [
    ("rules: [\n  {name: a, max: 0\n", r"rules\.yaml:3:1 is not valid YAML: did not find expected"),
    ("", r"rules\.yaml is empty; expected a mapping"),
    ("- a\n- b\n", r"rules\.yaml:1: the file is a list; expected a mapping"),
    ("version: 2\nrules:\n  - {name: a, max: 0}\n", r"rules\.yaml:1: version is 2; expected 1\."),
    ("regions: {}\n", r"rules\.yaml:1: the file has no rules: list"),
    ("rule:\n  - {name: a, max: 0}\n", r"rules\.yaml:1: the file has the unknown key 'rule' \(did you mean 'rules'\?\)"),
    ("rules:\n  - name: a\n    maxx: 0\n", r"rules\.yaml:3: rules\[0\] has the unknown key 'maxx' \(did you mean 'max'\?\)"),
    ("rules:\n  - name: a\n    max: 0\n  - name: b\n    max: -1\n", r"rules\.yaml:5: rules\[1\]\.max is -1; expected an integer >= 0\."),
    ("rules:\n  - name: a\n    max: two\n", r"rules\.yaml:3: rules\[0\]\.max is 'two'; expected an integer >= 0\."),
    ("rules:\n  - {name: a}\n", r"rules\.yaml:2: rules\[0\] has neither min nor max"),
    ("rules:\n  - {max: 0}\n", r"rules\.yaml:2: rules\[0\] has no name:"),
    ("rules:\n  - {name: a, min: 3, max: 1}\n", r"rules\.yaml:2: rules\[0\]\.min 3 is above max 1"),
    ("rules:\n  - {name: a, max: 0}\n  - {name: a, max: 1}\n", r"rules\.yaml:3: rules\[1\]\.name 'a' repeats the rule on line 2"),
    ("regions:\n  left: {rect: [0, 0, 10]}\nrules:\n  - {name: a, region: left, max: 0}\n",
     r"rules\.yaml:2: regions\.left\.rect is \[0, 0, 10\]; expected \[x1, y1, x2, y2\] with x2 > x1"),
    ("regions:\n  left: {rect: [0, 0, 10, 10]}\nrules:\n  - name: a\n    region: lft\n    max: 0\n",
     r"rules\.yaml:5: rules\[0\]\.region 'lft' is not defined under regions:; defined: left\."),
    ("regions:\n  p:\n    polygon: [[0, 0], [5, 5]]\nrules:\n  - {name: a, max: 0}\n",
     r"rules\.yaml:3: regions\.p\.polygon is 2 points; expected a list of 3 to 1,000"),
    ("regions:\n  p: {rect: [0, 0, 1, 1], polygon: [[0, 0], [1, 0], [0, 1]]}\nrules:\n  - {name: a, max: 0}\n",
     r"rules\.yaml:2: regions\.p has rect and polygon; expected exactly one"),
    ("thresholds:\n  scratch:\n    min_conf: 1.5\nrules:\n  - {name: a, max: 0}\n",
     r"rules\.yaml:3: thresholds\.scratch\.min_conf is 1\.5; expected a number in \[0, 1\]\."),
    ("rules:\n  - {name: a, max: 0, overlap: 0.5}\n", r"rules\.yaml:2: rules\[0\]\.overlap needs a region:"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_rules_files_give_one_sentence_with_file_and_line(tmp_path, text, message):
    with pytest.raises(RulesFileError, match=message) as info:
        load_rules(write(tmp_path, text))
    for line in str(info.value).splitlines():  # one sentence per mistake, each naming the file
        assert line.startswith(str(tmp_path / "rules.yaml")) and line.endswith(".")


def test_every_mistake_is_reported_and_class_names_are_checked(tmp_path):
    path = write(
        tmp_path, "version: 3\nrules:\n  - {name: a, max: -2}\n  - {name: b, classes: [scrach, 7], max: 0}\n"
    )
    with pytest.raises(RulesFileError) as info:
        load_rules(path)
    assert str(info.value).splitlines() == [
        f"{path}:1: version is 3; expected 1.",
        f"{path}:3: rules[0].max is -2; expected an integer >= 0.",
    ]
    rs = load_rules(
        write(tmp_path, "rules:\n  - name: b\n    classes:\n      - scrach\n      - 7\n    max: 0\n")
    )
    with pytest.raises(RulesFileError) as info:
        rs.bind(NAMES)
    assert str(info.value).splitlines() == [
        f"{path}:4: class 'scrach' is not one of the model's classes (did you mean 'scratch'?); expected one of "
        "scratch, screw.",
        f"{path}:5: class id 7 is not in the model; expected 0 to 1.",
    ]


# ------------------------------------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    root = tmp_path_factory.mktemp("inspect")
    fixed_boxes_onnx(root / "fixed.onnx", BOXES, NAMES)
    (root / "rules.yaml").write_text(RULES)
    parts = root / "parts"
    parts.mkdir()
    for name, (scores, _, _) in CASES.items():
        cv2.imwrite(str(parts / name), crafted_frame(scores))
    (parts / "10_corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not really an image")
    return root


def test_cli_gives_the_documented_verdicts_and_audits_every_item(crafted, tmp_path):
    from y9cli.app import app

    parts = crafted / "parts"
    before = {p.name: p.read_bytes() for p in parts.iterdir()}
    args = ["inspect", str(parts), "--model", str(crafted / "fixed.onnx"), "--rules", str(crafted / "rules.yaml"),
            "--project", str(tmp_path), "--name", "audit", "--device", "cpu"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "10 items: 3 passed, 6 failed, 1 unreadable" in res.output
    rows = list(csv.DictReader((tmp_path / "audit" / "audit.csv").open()))
    lines = [json.loads(s) for s in (tmp_path / "audit" / "audit.jsonl").read_text().splitlines()]
    assert [Path(r["item"]).name for r in rows] == sorted([*CASES, "10_corrupt.png"])
    assert [Path(r["item"]).name for r in lines] == [Path(r["item"]).name for r in rows]
    for row, rec in zip(rows, lines):
        name = Path(row["item"]).name
        verdict, reasons = ("error", ["cannot be decoded"]) if name == "10_corrupt.png" else CASES[name][1:]
        assert row["verdict"] == rec["verdict"] == verdict, name
        assert len(rec["reasons"]) == len(reasons) and row["reasons"] == " | ".join(rec["reasons"])
        for got, want in zip(rec["reasons"], reasons):
            assert want in got, (name, got)
        assert (
            rec["run"] == row["run"]
            and rec["rules"].endswith("rules.yaml")
            and rec["model"].endswith(".onnx")
        )
    # the counted detections are the crafted ones, in frame pixels
    good = next(r for r in lines if r["item"].endswith("01_good.png"))
    assert good["counts"] == {"no scratch on the left": 0, "one screw in the corner": 1}
    assert [d["class_name"] for d in good["detections"]] == ["screw"]
    np.testing.assert_allclose(good["detections"][0]["xyxy"], [40, 32, 56, 48])
    assert good["detections"][0]["confidence"] == pytest.approx(204 / 255)
    # the same folder again is refused; with --exist-ok (and --fail-exit: status 1) a second run appends (the
    # audit log keeps both runs) and the inputs are untouched
    res = CliRunner().invoke(app, [*args, "-q"])
    assert res.exit_code != 0 and "already holds 2 files: audit.csv, audit.jsonl" in str(res.exception)
    res = CliRunner().invoke(app, [*args, "--fail-exit", "-q", "--exist-ok"])
    assert res.exit_code == 1 and "PASS" not in res.output
    assert "audit.csv and audit.jsonl are appended to" in res.output
    rows2 = list(csv.DictReader((tmp_path / "audit" / "audit.csv").open()))
    assert len(rows2) == 20 and len({r["run"] for r in rows2}) == 2
    assert {p.name: p.read_bytes() for p in parts.iterdir()} == before
    # all good items with --fail-exit: status 0
    res = CliRunner().invoke(app, ["inspect", str(parts / "01_good.png"), *args[2:], "--fail-exit", "--exist-ok"])
    assert res.exit_code == 0 and "1 item: 1 passed" in res.output


def test_cli_bad_rules_file_exits_2_with_the_sentence(crafted, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: a\n    region: nowhere\n    max: 0\n")
    proc = subprocess.run(
        [sys.executable, "-m", "y9cli", "inspect", str(crafted / "parts"), "--model",
         str(crafted / "fixed.onnx"), "--rules", str(bad), "--out", str(tmp_path / "a")],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"error: {bad}:3: rules[0].region 'nowhere' is not defined under regions:" in proc.stderr
    assert not (tmp_path / "a").exists()  # nothing inspected, no audit log started


def test_the_guide_documents_this_test_set():
    """docs/inspection.md's worked example is this file's RULES and CASES: the guide cannot drift."""
    doc = (REPO / "docs" / "inspection.md").read_text()
    block = doc.split("<!-- inspection-example-rules -->", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert block == RULES
    table = (
        doc.split("<!-- inspection-example-verdicts -->", 1)[1].strip().split("\n\n", 1)[0].splitlines()[2:]
    )
    documented = {cells[1].strip(): cells[3].strip() for cells in (row.split("|") for row in table)}
    assert documented == {**{k: v[1] for k, v in CASES.items()}, "10_corrupt.png": "error"}


def test_the_guides_bad_rules_file_gives_the_documented_sentences(tmp_path, monkeypatch):
    doc = (REPO / "docs" / "inspection.md").read_text()
    text = doc.split("<!-- inspection-bad-rules -->", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    out = doc.split("<!-- inspection-bad-rules-output -->", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "rules.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RulesFileError) as info:
        load_rules("rules.yaml")
    assert f"error: {info.value}\n" == out


def test_a_run_stopped_half_way_keeps_the_verdicts_done(crafted, tmp_path):
    from y9deploy.pipelines.inspection.run import run_inspection

    seen = []

    def stop_after_three(verdict):
        seen.append(verdict.item)
        if len(seen) == 3:
            raise KeyboardInterrupt  # Ctrl-C between two items

    with pytest.raises(KeyboardInterrupt):
        run_inspection(crafted / "parts", crafted / "fixed.onnx", crafted / "rules.yaml", audit_dir=tmp_path,
                       device="cpu", on_item=stop_after_three)  # fmt: skip
    rows = list(csv.DictReader((tmp_path / "audit.csv").open()))
    lines = [json.loads(s) for s in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["item"] for r in rows] == [r["item"] for r in lines] == seen
    assert [r["verdict"] for r in rows] == ["pass", "fail", "pass"]
