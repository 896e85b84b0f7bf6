"""Issue 46 items 3 and 4, for ``bench_faults.py`` (outcomes as in ``fault_cases``): bad values at the boundary of
``y9deploy.Detections`` (a child Python process calls the public API as an application would: ``clear`` when it gets
one ValueError sentence naming the row and what was expected), unwarned oddities (a y9 ONNX without its digest,
an engine manifest's unreadable metadata, repeated images, repeated class names), messages (a 300-character class
name, a zone over the point limit) and geometry options (count lines, zones, inspection polygons)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fault_cases import Context, Outcome, judge, photos

from tests.reliability.bounded_run import Run
from tests.train.data_fixtures import coco_pair_dataset

_API = """
import sys, warnings
import numpy as np
from y9deploy import Detections
warnings.simplefilter("always")
warnings.showwarning = lambda m, *a, **k: print(f"warning: {m}", file=sys.stderr)
class SV:  # what supervision's sv.Detections carries
    def __init__(self, xyxy, confidence, class_id, data=None):
        self.xyxy, self.confidence, self.class_id, self.data = np.asarray(xyxy, float), np.asarray(confidence), np.asarray(class_id), data or {}
try:
    d = %s
    print(d.to_json())
    print(__import__("json").dumps(d.to_coco(1), allow_nan=False))
except ValueError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _api_run(ctx: Context, d: Path, expression: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(ctx.code), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _API % expression], cwd=d, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr, float("nan"))


def api_error(name: str, expression: str, words: str):
    def case(ctx: Context, d: Path) -> Outcome:
        return judge(f"Detections: {name}", _api_run(ctx, d, expression), [words], expect="error")

    return case


def api_warning(name: str, expression: str, words: str):
    def case(ctx: Context, d: Path) -> Outcome:
        return judge(f"Detections: {name}", _api_run(ctx, d, expression), [words], expect="report")

    return case


_BOX = "[[10, 20, 30, 40]]"
DETECTION_CASES = [
    ("from_supervision: class id -1", api_error(
        "class id -1 (from_supervision)", f"Detections.from_supervision(SV({_BOX}, [0.5], [-1]), ['a'])",
        "class_id row 0 is -1; expected a class id >= 0")),
    ("from_supervision: NaN box", api_error(
        "NaN box (from_supervision)", "Detections.from_supervision(SV([[np.nan, 2, 3, 4]], [0.5], [0]), ['a'])",
        "expected finite x1, y1, x2, y2")),
    ("from_supervision: inverted box", api_error(
        "inverted box (from_supervision)", "Detections.from_supervision(SV([[30, 20, 10, 40]], [0.5], [0]), ['a'])",
        "an inverted box; expected x1 <= x2 and y1 <= y2")),
    ("from_supervision: confidence 7", api_error(
        "confidence 7 (from_supervision)", f"Detections.from_supervision(SV({_BOX}, [7.0], [0]), ['a'])",
        "confidence row 0 is 7; expected a score in [0, 1]")),
    ("from_supervision: confidence -3", api_error(
        "confidence -3 (from_supervision)", f"Detections.from_supervision(SV({_BOX}, [-3.0], [0]), ['a'])",
        "confidence row 0 is -3; expected a score in [0, 1]")),
    ("from_supervision: fewer names than classes", api_error(
        "fewer names than classes (from_supervision)",
        "Detections.from_supervision(SV([[1, 2, 3, 4], [1, 2, 3, 4]], [0.5, 0.5], [0, 4]), ['a', 'b'])",
        "class_id row 1 is 4, a class without a name")),
    ("constructor: inf box", api_error(
        "inf box (constructor)", "Detections([[0, 0, np.inf, 5]], [0.5], [0], ['a'])", "expected finite")),
    ("from_rows: 1e300 box", api_error(
        "1e300 box (from_rows)", "Detections.from_rows(np.array([[0, 0, 1e300, 5, 0.5, 0]]), ['a'])",
        "expected finite")),
    ("constructor: 80 duplicate names", api_warning(
        "80 duplicate class names (constructor)", f"Detections({_BOX}, [0.5], [3], ['thing'] * 80)",
        "the class names repeat 'thing' for classes 0, 1, 2")),
]  # fmt: skip


# ------------------------------------------------------------------------------------------------ notes
def _strip_digest(src: Path, dst: Path) -> Path:
    """``src`` with its y9_digest metadata entry removed (as a user editing the file with ``onnx`` would)."""
    import onnx

    model = onnx.load(str(src))
    kept = [p for p in model.metadata_props if p.key != "y9_digest"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(dst))
    return dst


def _y9_onnx(ctx: Context, d: Path) -> Path:
    """A y9 export (sealed) with its y9_digest entry removed."""
    from y9deploy.model_file.onnx_digest import seal

    sealed = d / "sealed.onnx"
    sealed.write_bytes(seal(ctx.onnx.read_bytes()))
    return _strip_digest(sealed, d / "m.onnx")


def unchecked_onnx(command: str):
    def case(ctx: Context, d: Path) -> Outcome:
        onnx = _y9_onnx(ctx, d)
        src = photos(d / "src", 2)
        args = {"predict": ["predict", str(src), "-m", str(onnx), "--save-dir", str(d / "out")],
                "benchmark": ["benchmark", str(onnx), "--iters", "3", "--warmup", "1"],
                "info": ["info", str(onnx)]}[command]  # fmt: skip
        run = ctx.y9(args, d)
        words = "not checked" if command != "info" else "bytes not checked"
        return judge(f"{command}: a y9 ONNX without its digest entry", run, [words], expect="report")

    return case


def engine_metadata_unreadable(ctx: Context, d: Path) -> Outcome:
    from y9deploy.engine.manifest import manifest_path

    onnx = shutil.copy(ctx.onnx, d / "m.onnx")
    built = ctx.y9(["build-engine", str(onnx), "--target", "sm89", "--batch", "1:2:4"], d)
    if built.returncode != 0:
        raise RuntimeError(f"build-engine failed: {built.stderr[-500:]}")
    path = manifest_path(d / "m.engine")
    data = json.loads(path.read_text())
    data["onnx_metadata"] = {"names": "{{{"}
    path.write_text(json.dumps(data))
    run = ctx.y9(["info", str(d / "m.engine"), "--json"], d)
    try:
        report = json.loads(run.stdout)
        fair = not any(c.startswith("manifest entries") and "except" not in c for c in report["checked"])
    except (json.JSONDecodeError, KeyError):
        fair = False
    out = judge("info: an engine whose manifest metadata is unreadable", run, ["onnx_metadata: NOT checked"],
                expect="report")  # fmt: skip
    return out if fair or out.outcome == "crash" else Outcome(out.case, "silent", *[getattr(out, k) for k in
                                                               ("exit_code", "peak_mb", "said")])  # fmt: skip


def repeated_images(times: int, split: str = "val"):
    def case(ctx: Context, d: Path) -> Outcome:
        yml = coco_pair_dataset(d / "data")
        image = d / "data" / "images" / "val" / "c.jpg"
        listed = d / "data" / f"{split}.txt"
        with open(listed, "w") as f:
            f.writelines(f"{image}\n" for _ in range(times))
        yml.write_text(yml.read_text().replace(f"{split}: images/{split}", f"{split}: {split}.txt"))
        run = ctx.y9(["data", "check", str(yml)], d, timeout=600)
        return judge(f"data check: a {split} list naming one image {times:,} times", run,
                     [f"{times:,} images but only 1 distinct one", str(yml)], expect="report")  # fmt: skip

    return case


def duplicate_names_onnx(ctx: Context, d: Path) -> Outcome:
    from tests.deploy.runtime_support import export_tiny_onnx, y9_metadata

    onnx = export_tiny_onnx(d / "m.onnx", nc=80, imgsz=(96, 128))
    import onnx as onnx_lib

    model = onnx_lib.load(str(onnx))
    for p in model.metadata_props:
        if p.key == "names":
            p.value = y9_metadata(["thing"] * 80, (96, 128))["names"]
    onnx_lib.save(model, str(onnx))
    run = ctx.y9(["predict", str(photos(d / "src", 2)), "-m", str(onnx), "--save-dir", str(d / "out")], d)
    return judge("predict: an ONNX with 80 equal class names", run, ["the class names repeat 'thing'"],
                 expect="report")  # fmt: skip


NOTE_CASES = [
    ("y9 ONNX without its digest entry (predict)", unchecked_onnx("predict")),
    ("y9 ONNX without its digest entry (benchmark)", unchecked_onnx("benchmark")),
    ("y9 ONNX without its digest entry (info)", unchecked_onnx("info")),
    ("engine manifest metadata unreadable (info)", engine_metadata_unreadable),
    ("val list naming one image 1,000,000 times (data check)", repeated_images(1_000_000)),
    ("train list naming one image 1,000 times (data check)", repeated_images(1_000, "train")),
    ("80 equal class names in an ONNX (predict)", duplicate_names_onnx),
]


# ------------------------------------------------------------------------------------------------ messages
def long_name(command: str):
    def case(ctx: Context, d: Path) -> Outcome:
        yml = coco_pair_dataset(d / "data")
        yml.write_text(yml.read_text().replace("nc: 80", "names: [a, " + "n" * 300 + "]"))
        if command == "data check":
            args = ["data", "check", str(yml), "--no-cache"]
        else:
            from fault_cases import TRAIN

            args = ["train", "--data", str(yml), *TRAIN, "--project", str(d / "r")]
        run = ctx.y9(args, d, address_space=None)
        return judge(f"{command}: a 300-character class name", run, [str(yml), "with 300 characters"],
                     expect="error", intact=not (d / "r").exists())  # fmt: skip

    return case


def long_name_onnx(ctx: Context, d: Path) -> Outcome:
    from tests.deploy.runtime_support import export_tiny_onnx

    onnx = export_tiny_onnx(d / "m.onnx", nc=3)
    import onnx as onnx_lib

    model = onnx_lib.load(str(onnx))
    for p in model.metadata_props:
        if p.key == "names":
            p.value = json.dumps(["a", "b", "n" * 300])
    onnx_lib.save(model, str(onnx))
    run = ctx.y9(["predict", str(photos(d / "src", 1)), "-m", str(onnx), "--save-dir", str(d / "out")], d)
    return judge("predict: an ONNX with a 300-character class name", run, ["300 characters", str(onnx)],
                 expect="error")  # fmt: skip


MESSAGE_CASES = [
    ("300-character class name (data check)", long_name("data check")),
    ("300-character class name (train)", long_name("train")),
    ("300-character class name in an ONNX (predict)", long_name_onnx),
]


def _video(path: Path, frames: int = 20) -> Path:
    import cv2
    import numpy as np

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (128, 96))
    rng = np.random.default_rng(0)
    for _ in range(frames):
        writer.write(rng.integers(0, 256, (96, 128, 3), dtype=np.uint8))
    writer.release()
    return path


def geometry(option: str, value: str, words: list[str], expect: str = "error"):
    def case(ctx: Context, d: Path) -> Outcome:
        video = _video(d / "line.mp4")
        run = ctx.y9(["predict", str(video), "-m", str(ctx.onnx), "--save-dir", str(d / "out"), option, value], d)
        shown = value if len(value) < 40 else f"{value[:20]}... ({len(value):,} characters)"
        written = [p for p in (d / "out").rglob("*") if p.is_file()] if expect == "error" else []
        return judge(f"predict {option} {shown}", run, words, expect=expect, intact=not written)

    return case


def rules_polygon(point: str):
    def case(ctx: Context, d: Path) -> Outcome:
        rules = d / "rules.yaml"
        rules.write_text(f"regions:\n  r: {{polygon: [[0, 0], {point}, [10, 10]]}}\nrules:\n  - {{name: a, max: 0}}\n")
        src = photos(d / "parts", 1)
        run = ctx.y9(["inspect", str(src), "-m", str(ctx.onnx), "-r", str(rules), "--project", str(d / "o")], d)
        return judge(f"inspect: a rules polygon point {point}", run, [f"{rules}:2", "expected a number in"],
                     expect="error")  # fmt: skip

    return case


GEOMETRY_CASES = [
    ("count line with inf (predict)", geometry("--count-line", "0,50,inf,50", ["count line", "coordinate inf"])),
    ("count line with 1e300 (predict)", geometry("--count-line", "0,1e300,128,50", ["count line", "coordinate 1e+300"])),
    ("zone with 1e300 (predict)", geometry("--zone", "0,0,1e300,0,0,1e300", ["zone", "coordinate 1e+300"])),
    ("zone with -inf (predict)", geometry("--zone", "0,0,100,0,100,-inf", ["zone", "coordinate -inf"])),
    ("rules polygon with inf (inspect)", rules_polygon("[.inf, 0]")),
    ("rules polygon with 1e300 (inspect)", rules_polygon("[1.0e+300, 0]")),
    ("zone wholly outside the frame (predict)", geometry("--zone", "2000,2000,3000,2000,3000,3000",
                                                         ["lies wholly outside the 128x96 frame"], expect="report")),
    ("count line wholly outside the frame (predict)", geometry("--count-line", "500,500,900,500",
                                                               ["lies wholly outside the 128x96 frame"], expect="report")),
]  # fmt: skip
MESSAGE_CASES.append(("zone of 25,000 points, 100 kB (predict)", geometry(
    "--zone", ",".join(["1,2"] * 25_000), ["polygon has 25,000 points; expected 3 to 1,000"])))
