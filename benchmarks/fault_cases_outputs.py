"""Issue 57 items 4 to 7, for ``bench_faults.py`` (outcomes as in ``fault_cases``): model configs with numbers out of
bounds (``y9 train --model cfg.yaml``: ``crash`` past ``BOUND_MB`` more than a clean run), outputs whose names say
another format, reports (``y9 info`` of a checkpoint without a digest, a resumed run's report), a glob through a
looping link, a TIFF of several pages, API arguments of the wrong type, and the silent leftovers of the last pass.
API cases run a snippet in a child Python process as an application would: ``clear`` when it ends with one sentence
(an ``error:`` line from a y9 error, a ValueError or TypeError, exit 2) or the expected ``warning:`` line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
from fault_cases import BOUND_MB, PHOTOS, TRAIN, Context, Outcome, judge, photos, trained_peak, trained_run

from tests.reliability.bounded_run import Run
from tests.train.data_fixtures import coco_pair_dataset

GELAN_T = Path(__file__).resolve().parents[1] / "y9train" / "models" / "configs" / "gelan-t.yaml"
LAYER_1 = "{op: conv, out: 32, k: 3, s: 2}"
LAYER_4 = "{op: repncspelan, out: 64, mid: 64, branch: 32, depth: 3}"
LAYER_11 = "{op: concat, from: [-1, 6]}"

_SNIPPET = """
import sys, warnings
warnings.simplefilter("always")
warnings.showwarning = lambda m, *a, **k: print(f"warning: {m}", file=sys.stderr)
try:
%s
except (ValueError, TypeError, OSError) as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _api(ctx: Context, d: Path, code: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(ctx.code), "OMP_NUM_THREADS": "1"}
    body = "\n".join("    " + line for line in code.strip().splitlines())
    proc = subprocess.run([sys.executable, "-c", _SNIPPET % body], cwd=d, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr, float("nan"))


# ------------------------------------------------------------------------------------------------ configs (57.4)
def config(old: str, new: str, words: list[str]):
    def case(ctx: Context, d: Path) -> Outcome:
        cfg = d / "cfg.yaml"
        text = GELAN_T.read_text()
        assert old in text, old
        cfg.write_text(text.replace(old, new, 1))
        yml = coco_pair_dataset(d / "data")
        args = ["train", "--data", str(yml), *TRAIN, "--project", str(d / "runs"), "--name", "r"]
        args[args.index("--model") + 1] = str(cfg)
        run = ctx.y9(args, d, address_space=None, timeout=300)
        bound = trained_peak(ctx, d / "ref") + BOUND_MB
        return judge(f"train --model cfg.yaml with {new.strip()[:60]}", run, [str(cfg), *words], expect="error",
                     bound_mb=bound)  # fmt: skip

    return case


# ------------------------------------------------------------------------------------------------ outputs (57.5)
def wrong_suffix(command: str, name: str):
    def case(ctx: Context, d: Path) -> Outcome:
        pt = trained_run(ctx, d / "ref") / "weights" / "last.pt"
        out = d / name
        args = ["reparam", str(pt), str(out)] if command == "reparam" else ["export", str(pt), "-o", str(out),
                                                                              "--imgsz", "64", "--no-check"]  # fmt: skip
        run = ctx.y9(args, d)
        want = ".pt" if command == "reparam" else ".onnx"  # the sentence names the file and the suffix expected
        return judge(f"{command} -o {name}", run, [str(out), "expected", want], expect="error")  # misnamed: silent

    return case


def info_without_digest(ctx: Context, d: Path) -> Outcome:
    run = _api(ctx, d, """
import torch
from y9train.checkpoints.load import checkpoint_payload
from y9train.models import build_model
m = build_model("gelan-t", nc=2).eval()
torch.save(checkpoint_payload(m, "bare.pt", imgsz=64), "bare.pt")
from y9deploy.facts import inspect_facts
print("warning: " + inspect_facts("bare.pt").checked[0])
""")
    return judge("info: a y9 .pt without its tensor digest", run, ["not checked: no tensor digest"], expect="report")


def resumed_report(ctx: Context, d: Path) -> Outcome:
    run_dir = d / "run"
    shutil.copytree(trained_run(ctx, d / "ref"), run_dir)
    for name in ("metrics.json", "per_class.csv", "confusion_matrix.csv"):
        (run_dir / name).unlink(missing_ok=True)  # a run stopped before its end had not written them
    (run_dir / ".y9.lock").unlink(missing_ok=True)
    run = ctx.y9(["train", "--resume", str(run_dir / "weights" / "last.pt"), "--epochs", "2"], d, address_space=None)
    done = (run_dir / "metrics.json").is_file() and (run_dir / "per_class.csv").is_file()
    return judge("train --resume after a stop: the run's report", run, [] if done else ["metrics.json written"],
                 expect="report")  # fmt: skip


def glob_loop(ctx: Context, d: Path) -> Outcome:
    src = photos(d / "imgs", 1)
    (src / "loop").symlink_to(src)
    run = ctx.y9(["predict", f"{src}/**/*.jpg", "-m", str(ctx.onnx), "--project", str(d), "--name", "o"], d)
    jsonl = d / "o" / "predictions.jsonl"
    once = jsonl.is_file() and len(jsonl.read_text().splitlines()) == 1
    return judge("predict: a glob through a folder link that loops", run, [] if once else ["each file once"],
                 expect="report")  # fmt: skip


def tiff_pages(ctx: Context, d: Path) -> Outcome:
    tif = d / "scan.tif"
    cv2.imwritemulti(str(tif), [np.full((96, 128, 3), v, np.uint8) for v in (40, 200, 90, 10)])
    run = ctx.y9(["predict", str(tif), "-m", str(ctx.onnx), "--no-save"], d)
    return judge("predict: a TIFF of 4 pages", run, [str(tif), "4 pages", "page 1"], expect="report")


def api_case(name: str, code: str, words: list[str], expect: str = "error"):
    """``code`` with IMAGE (a photo copied into the case folder, checked byte for byte after), ONNX (the tiny
    detector), 'PT' (a trained y9 checkpoint) and DATA (a two-image data.yaml) filled in."""

    def case(ctx: Context, d: Path) -> Outcome:
        shutil.copy(PHOTOS[0], d / PHOTOS[0].name)
        before = (d / PHOTOS[0].name).read_bytes()
        data = coco_pair_dataset(d / "data") if "DATA" in code else None
        pt = trained_run(ctx, d / "ref") / "weights" / "last.pt" if "'PT'" in code else None
        code_ = code.replace("IMAGE", PHOTOS[0].name).replace("ONNX", str(ctx.onnx)).replace("DATA", str(data))
        code_ = code_.replace("'PT'", repr(str(pt)))
        run = _api(ctx, d, code_)
        return judge(f"API: {name}", run, words, expect=expect, intact=(d / PHOTOS[0].name).read_bytes() == before)

    return case


def y9_onnx_without_digest(ctx: Context, d: Path) -> Path:
    """The tiny detector sealed as ``y9 export`` seals it, then its y9_digest entry removed (an edited y9 export)."""
    import onnx

    from y9deploy.model_file.onnx_digest import DIGEST_KEY, seal

    model = onnx.load_from_string(seal(ctx.onnx.read_bytes()))
    kept = [p for p in model.metadata_props if p.key != DIGEST_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(d / "m.onnx"))
    return d / "m.onnx"


def engine_without_digest(ctx: Context, d: Path) -> Outcome:
    onnx = y9_onnx_without_digest(ctx, d)
    run = ctx.y9(["build-engine", str(onnx), "-o", str(d / "m.engine"), "--target", "sm89", "--batch", "1:2:4"], d,
                 address_space=None)  # fmt: skip
    return judge("build-engine: a y9 ONNX without its digest entry", run, ["not checked"], expect="report")


CONFIG_CASES = [
    ("config out: 2000000", config(LAYER_1, "{op: conv, out: 2000000, k: 3, s: 2}", ["layer 1", "2000000"])),
    ("config depth: 10000000", config(LAYER_4, LAYER_4.replace("depth: 3", "depth: 10000000"), ["layer 4", "10000000"])),
    ("config out: -16", config(LAYER_1, "{op: conv, out: -16, k: 3, s: 2}", ["layer 1", "-16"])),
    ("config k: 0", config(LAYER_1, "{op: conv, out: 32, k: 0, s: 2}", ["layer 1", "k: 0"])),
    ("config s: 0", config(LAYER_1, "{op: conv, out: 32, k: 3, s: 0}", ["layer 1", "s: 0"])),
    ("config out: sixteen", config(LAYER_1, "{op: conv, out: sixteen, k: 3, s: 2}", ["layer 1", "sixteen"])),
    ("config from: [-1, six]", config(LAYER_11, "{op: concat, from: [-1, six]}", ["layer 11", "six"])),
    ("config strides: [0, -1, x]", config("strides: [8, 16, 32]", "strides: [0, -1, x]", ["strides", "[0, -1, 'x']"])),
]  # fmt: skip
OUTPUT_CASES = [
    ("reparam -o x.onnx", wrong_suffix("reparam", "x.onnx")),
    ("export -o e2.pt", wrong_suffix("export", "e2.pt")),
    ("export -o x.txt", wrong_suffix("export", "x.txt")),
    ("info: .pt without digest", info_without_digest),
    ("resume: report whatever the fitness", resumed_report),
    ("glob through a looping link", glob_loop),
    ("TIFF of 4 pages", tiff_pages),
    ("Result.save() without a name", api_case("Result.save() in the image's folder",
                                              "import y9\ny9.Model('ONNX').predict('IMAGE')[0].save()", [],
                                              expect="report")),
    ("API train(batch=2.5)", api_case("train(batch=2.5)", "import y9\ny9.Model('gelan-t').train(data='DATA', "
                                      "batch=2.5, epochs=1, imgsz=64, device='cpu', workers=0)", ["batch", "2.5"])),
    ("API predict(save='no')", api_case("predict(save='no')", "import y9\ny9.Model('ONNX').predict('IMAGE', "
                                        "save='no')", ["save", "'no'"])),
    ("API train(imgsz='big')", api_case("train(imgsz='big')", "import y9\ny9.Model('gelan-t').train(data='DATA',"
                                        " imgsz='big', epochs=1, batch=2, device='cpu', workers=0)", ["imgsz", "'big'"])),
    ("API export(opset='new')", api_case("export(opset='new')", "import y9\ny9.Model('PT').export('m.onnx', "
                                         "opset='new')", ["opset", "'new'"])),
]  # fmt: skip
LEFTOVER_CASES = [
    ("build-engine of an ONNX without digest", engine_without_digest),
    ("load_checkpoint: 80 identical class names", api_case("load_checkpoint of 80 classes all named 'person'", """
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.load import save_checkpoint
from y9train.models import build_model
m = build_model("gelan-t", nc=80).eval()
m.names = ["person"] * 80
load_checkpoint(save_checkpoint(m, "same.pt", imgsz=64))
""", ["class names repeat", "'person' 80 times"], expect="report")),
    ("from_supervision: class 0 both cat and dog", api_case("from_supervision naming class 0 both cat and dog", """
import numpy as np, supervision as sv
from y9deploy import Detections
d = sv.Detections(xyxy=np.array([[0, 0, 9, 9], [5, 5, 20, 20]], float), confidence=np.array([0.9, 0.8]),
                  class_id=np.array([0, 0]), data={"class_name": np.array(["cat", "dog"])})
print(Detections.from_supervision(d).names)
""", ["class 0 both 'cat' and 'dog'"], expect="report")),
]  # fmt: skip
