"""``y9 inspect`` on a video or stream: the counting gate (issue 36). The end-to-end proof runs the embedded model on
a video of real coco8 crops moving on known paths (tests/deploy/track_scene.py, ``GATE_OBJECTS``): each window's
counts and verdict equal the crossings and zone visits of the scene's ground truth, and the audit log holds each
window's verdict as soon as it is given. The rest: the rules file's lines, the gate's windows on hand-made tracks,
the command line, a live stream behind the ``latest`` policy."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.deploy.track_scene import GATE_OBJECTS, LINE, FrameServer, crossing_frame, make_scene
from y9core.errors import RulesFileError
from y9deploy import Detections
from y9deploy.pipelines.inspection.gate import Gate, gate_rules
from y9deploy.pipelines.inspection.rules_file import load_rules
from y9deploy.pipelines.inspection.run import run_inspection
from y9deploy.pipelines.sources.frame_reader import ReconnectPolicy
from y9deploy.tracking.counting import FrameCounts
from y9deploy.tracking.tracker import TrackedDetections

FPS = 20.0
WINDOW = 4  # frames of one window: window_s 0.2 at 20 frames/s
KEEPOUT = (188, 0, 320, 240)  # x1, y1, x2, y2
GATE_RULES = f"""\
version: 1
window_s: {WINDOW / FPS}
regions:
  keepout: {{rect: [{", ".join(map(str, KEEPOUT))}]}}
lines:
  gate: [{", ".join(str(int(v)) for v in LINE)}]
rules:
  - {{name: a part every window, line: gate, min: 1}}
  - {{name: nothing goes out, line: gate, direction: out, max: 0}}
  - {{name: keep-out stays empty, region: keepout, max: 0}}
"""
RULE_NAMES = ("a part every window", "nothing goes out", "keep-out stays empty")


@pytest.fixture(scope="module")
def onnx(embedded_export):
    return embedded_export()


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    """The scene (16 frames, 320x240), its video at 20 frames/s and the rules file."""
    root = tmp_path_factory.mktemp("gate")
    scene = make_scene(16, 7.0, GATE_OBJECTS)
    video = scene.write(root / "gate.mp4", FPS)
    rules = root / "gate.yaml"
    rules.write_text(GATE_RULES, encoding="utf-8")
    return scene, video, rules


def truth(scene) -> list[dict[str, list[str]]]:
    """Per window, per rule: the classes the rule must count, from the scene's true boxes. A crossing is on the
    first frame an object's box centre is past the line x = 160; drawn downwards, the line's "in" side is the right
    (the zebra's way, as in test_tracking_video.py). The keep-out zone holds the objects whose centre is inside it
    on some frame of the window. (The scene puts every crossing and every zone entry or exit at least one frame away
    from a window's edge, so a box a few pixels off the truth cannot move it to another window.)"""
    frames = len(scene.frames)
    centres = (scene.boxes[:, :, :2] + scene.boxes[:, :, 2:]) / 2  # (T, K, 2)
    names = {22: "zebra", 16: "dog"}
    out = [{r: [] for r in RULE_NAMES} for _ in range(frames // WINDOW)]
    for j, cls in enumerate(scene.classes):
        k = crossing_frame(scene, j)
        if k is not None:
            out[k // WINDOW]["a part every window"].append(names[cls])
            if centres[k, j, 0] < LINE[0]:  # to the left: out
                out[k // WINDOW]["nothing goes out"].append(names[cls])
        x, y = centres[:, j, 0], centres[:, j, 1]
        inside = (x >= KEEPOUT[0]) & (x <= KEEPOUT[2]) & (y >= KEEPOUT[1]) & (y <= KEEPOUT[3])
        for w in sorted({int(k) // WINDOW for k in np.flatnonzero(inside)}):
            out[w]["keep-out stays empty"].append(names[cls])
    return out


def test_gate_verdicts_equal_the_scenes_crossings_and_zone_visits(onnx, gate, tmp_path):
    scene, video, rules = gate
    expected = truth(scene)
    assert [sorted(sum(w.values(), [])) for w in expected] == [["dog"], ["dog", "dog"], ["zebra"], ["zebra"]]
    audit = tmp_path / "audit"
    given = []

    def on_item(v):  # each window's verdict is on disk, whole, when it is given
        given.append(v)
        rows = list(csv.DictReader((audit / "audit.csv").open(newline="")))
        lines = (audit / "audit.jsonl").read_text().splitlines()
        assert len(rows) == len(lines) == len(given) and rows[-1]["item"] == json.loads(lines[-1])["item"] == v.item

    summary = run_inspection(video, onnx, rules, audit_dir=audit, on_item=on_item)
    records = [json.loads(s) for s in (audit / "audit.jsonl").read_text().splitlines()]
    assert [r["window"] for r in records] == list(range(len(expected)))
    for r, want in zip(records, expected, strict=True):
        got = {name: sorted(d["class_name"] for d in r["detections"] if d["rule"] == name) for name in RULE_NAMES}
        assert got == {k: sorted(v) for k, v in want.items()}, r
        assert r["counts"] == {k: len(v) for k, v in want.items()}
        fails = len(want["a part every window"]) < 1 or want["nothing goes out"] or want["keep-out stays empty"]
        assert r["verdict"] == ("fail" if fails else "pass"), r
        assert r["start_s"] == pytest.approx(r["window"] * WINDOW / FPS) and r["frames"] == WINDOW
        assert not r["partial"] and r["started"] is None  # a file: video time; its last frame ends the window
        assert all(r["start_s"] <= d["time_s"] < r["end_s"] for d in r["detections"])
    out = records[1]["detections"][1]
    assert records[1]["reasons"] == [f"nothing goes out: 1 crossing of gate going out (at most 0 allowed): "
                                     f"#{out['track_id']} dog out at {out['time_s']:g} s."]  # fmt: skip
    assert (summary.items, summary.passed, summary.failed, summary.frames) == (4, 1, 3, 16)
    lines = summary.counts[str(video)].lines["gate"]
    assert lines["in"] == {"zebra": 1} and lines["out"] == {"dog": 1}
    (last,) = [json.loads(s) for s in (audit / "summary.jsonl").read_text().splitlines()]
    assert last["run_id"] == records[0]["run"] and last["items"] == 4
    assert last["counts"][str(video)]["zones"]["keepout"]["by_class"] == {"dog": 1, "zebra": 1}


def test_inspect_command_on_a_video(onnx, gate, tmp_path):
    """The command prints each window's verdict as it is given and the summary; --fail-exit exits 1."""
    from y9cli.app import app

    scene, video, rules = gate
    args = ["inspect", str(video), "-m", str(onnx), "-r", str(rules), "--project", str(tmp_path), "--name", "g"]
    res = CliRunner().invoke(app, [*args, "--max-frames", "4", "--fail-exit"])
    assert res.exit_code == 1, res.output
    assert f"FAIL {video} 0-0.2 s: a part every window: 0 crossings of gate (at least 1 required).; keep-out " \
           "stays empty: 1 track in keepout (at most 0 allowed): #" in res.output  # fmt: skip
    assert "1 window (4 frames): 0 passed, 1 failed, 0 without frames" in res.output
    assert f"{video}: line gate: in 0 (none), out 0 (none)" in res.output
    assert (tmp_path / "g" / "summary.jsonl").is_file()
    again = CliRunner().invoke(app, [*args, "--max-frames", "1", "--exist-ok"])  # appended to, never replaced
    assert again.exit_code == 0, again.output
    assert "audit.csv and audit.jsonl are appended to (each row names its run), as is summary.jsonl" in again.output
    assert len((tmp_path / "g" / "summary.jsonl").read_text().splitlines()) == 2
    assert len((tmp_path / "g" / "audit.jsonl").read_text().splitlines()) == 2
    image = tmp_path / "part.png"
    image.write_bytes(b"not read: the rules are refused first")
    bad = CliRunner().invoke(app, ["inspect", str(image), "-m", str(onnx), "-r", str(rules), "--project", str(tmp_path)])
    assert bad.exit_code != 0
    assert (f"{rules}:8: rule 'a part every window' counts crossings of the line 'gate', which needs a video file, "
            f"a stream or a camera; {image} is not one.") in str(bad.exception)  # fmt: skip


def test_a_live_stream_is_judged_by_capture_time_with_the_latest_policy(onnx, gate, tmp_path):
    """An MJPEG camera (16 frames at 20 frames/s): the reader keeps only the newest frame while the model works
    (frames judged + frames dropped = frames sent); windows are counted on capture times from the first frame and
    carry their UTC start; what each window counted happened inside it."""
    scene, _, rules = gate
    server = FrameServer(scene.frames, fps=FPS, linger=0.5)
    summary = run_inspection(server.url, onnx, rules, audit_dir=tmp_path, max_frames=16,
                             reconnect=ReconnectPolicy(attempts=0))  # fmt: skip
    server.thread.join(5)
    records = [json.loads(s) for s in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert summary.frames + summary.dropped == 16 and sum(r["frames"] for r in records) == summary.frames
    assert [r["window"] for r in records] == list(range(len(records)))
    starts = [np.datetime64(r["started"].replace("+00:00", "")) for r in records]
    steps = np.diff(starts).astype("timedelta64[ms]").astype(int)
    assert all(s == pytest.approx(WINDOW / FPS * 1000, abs=1) for s in steps), steps
    for r in records:
        assert all(r["start_s"] <= d["time_s"] < r["end_s"] for d in r["detections"])
        assert r["verdict"] in ("pass", "fail") if r["frames"] else r["verdict"] == "error"


def _tracked(boxes, classes, ids, crossed=None) -> TrackedDetections:
    dets = Detections(np.asarray(boxes, np.float32).reshape(-1, 4), np.full(len(ids), 0.9), classes, ["part", "hand"])
    return TrackedDetections(dets, np.asarray(ids), counts=FrameCounts(crossed=crossed or {}))


def test_gate_windows_on_hand_made_tracks(tmp_path):
    """Window edges (a frame on an edge opens the next window), windows without a frame (``error``), a track that
    stays in a zone counted in each window it is seen in, class and direction filters, the partial last window."""
    path = tmp_path / "r.yaml"
    path.write_text("window_s: 1\nregions: {zone: {rect: [0, 0, 10, 10]}}\nlines: {gate: [20, 0, 20, 50]}\nrules:\n"
                    "  - {name: no hand in zone, region: zone, classes: [hand], max: 0}\n"
                    "  - {name: at most 1 part in, line: gate, classes: [part], direction: in, max: 1}\n")  # fmt: skip
    rules, _ = gate_rules(load_rules(path), ["part", "hand"])
    g = Gate(rules, 1.0, "cam", frame_s=0.1)
    hand_in_zone = ([[2, 2, 6, 6]], [1], [7])
    crossing = {"gate": [{"track_id": 3, "direction": "in", "class_name": "part"},
                         {"track_id": 4, "direction": "in", "class_name": "part"},
                         {"track_id": 5, "direction": "out", "class_name": "part"},
                         {"track_id": 6, "direction": "in", "class_name": "hand"}]}  # fmt: skip
    assert g.add(_tracked(*hand_in_zone), 100.0) == []
    assert g.add(_tracked([], [], [], crossing), 100.5) == []
    (w0,) = g.add(_tracked(*hand_in_zone), 101.0)  # on the edge: window 1
    assert (w0.verdict, w0.counts, w0.frames) == ("fail", {"no hand in zone": 1, "at most 1 part in": 2}, 2)
    assert w0.reasons[1] == "at most 1 part in: 2 crossings of gate going in (at most 1 allowed): #3 part in at " \
                            "0.5 s, #4 part in at 0.5 s."  # fmt: skip
    w1, w2, w3 = g.add(_tracked([[2, 2, 6, 6]], [1], [-1]), 104.2)  # an untracked hand is not counted
    assert (w1.verdict, w1.counts["no hand in zone"], w1.item) == ("fail", 1, "cam 1-2 s")  # still inside: again
    assert (w2.verdict, w3.verdict, w2.frames) == ("error", "error", 0) and "no frame of cam" in w2.reasons[0]
    last = g.finish()
    assert (last.window, last.verdict, last.partial, g.finish()) == (4, "pass", True, None)
    assert g.windows == 5


def test_the_rules_files_lines_and_windows_are_checked(tmp_path):
    """Every mistake of the gate's keys is reported at once, with file:line (as the image keys' mistakes are)."""
    path = tmp_path / "gate.yaml"
    path.write_text(
        "window_s: 0\n"
        "regions:\n"
        "  dock: {rect: [0, 0, 10, 10]}\n"
        "lines:\n"
        "  dock: [0, 0, 5, 5]\n"
        "  gate: [1, 1, 1, 1]\n"
        "  side: [0, 0, 9]\n"
        "rules:\n"
        "  - {name: a, line: gat, max: 1}\n"
        "  - {name: b, region: dock, line: gate, max: 0}\n"
        "  - {name: c, region: dock, direction: in, max: 0}\n"
        "  - {name: d, line: side, direction: up, max: 0}\n",
        encoding="utf-8",
    )
    with pytest.raises(RulesFileError) as info:
        load_rules(path)
    assert str(info.value).splitlines() == [
        f"{path}:1: window_s is 0; expected the seconds of one verdict of a video, above 0.",
        f"{path}:5: lines.dock has the name of a region; expected a name of its own (counts are reported by name).",
        f"{path}:6: lines.gate is [1, 1, 1, 1]; expected [x1, y1, x2, y2]: two different points (frame pixels).",
        f"{path}:7: lines.side is [0, 0, 9]; expected [x1, y1, x2, y2]: two different points (frame pixels).",
        f"{path}:9: rules[0].line 'gat' is not defined under lines:; defined: dock, gate, side.",
        f"{path}:10: rules[1] has both region and line; expected one: a region rule counts objects inside, a line "
        "rule counts crossings.",
        f"{path}:11: rules[2].direction needs a line: whose crossings it counts.",
        f"{path}:12: rules[3].direction is 'up'; expected in or out (leave it out to count both).",
    ]
    path.write_text("lines: {gate: [0, 120.5, 320, 120.5]}\nrules: [{name: a, line: gate, direction: out, max: 3}]\n")
    ruleset = load_rules(path)
    assert ruleset.window_s == 60.0 and ruleset.lines["gate"].end == (320, 120.5)
    assert [(s.count_line, s.direction, s.max_count) for s in ruleset.line_rules] == [("gate", "out", 3)]
