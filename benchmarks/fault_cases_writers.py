"""Issue 46 items 1 and 2, for ``bench_faults.py`` (outcomes as in ``fault_cases``): two commands writing one output
file at once, neither with --exist-ok (``clear``: exactly one writes, the other exits 2 with one sentence naming the
file, and the file is the winner's, whole; ``loss``: both say they wrote it, or the file is damaged); damaged resume
state and tagged YAML values (``clear``: one sentence naming the file, nothing written)."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import torch
from fault_cases import TRAIN, Context, Outcome, judge, photos, trained_run

from tests.reliability.bounded_run import Run
from tests.train.data_fixtures import coco_pair_dataset

EMBEDDED = Path(__file__).resolve().parents[1] / "y9deploy" / "assets" / "y9-coco128.pt"


def _both(ctx: Context, d: Path, a: list[str], b: list[str]) -> list[Run]:
    """``y9 A`` and ``y9 B`` started together (two child processes)."""
    runs: list[Run | None] = [None, None]

    def go(i: int, args: list[str]) -> None:
        runs[i] = ctx.y9(args, d, address_space=None)

    threads = [threading.Thread(target=go, args=(i, args)) for i, args in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs  # type: ignore[return-value]


def _judge_pair(case: str, runs: list[Run], out: Path, whole) -> Outcome:
    """``whole(out, winner_index)``: the file is the winner's and intact."""
    codes = [r.returncode for r in runs]
    text = "\n".join(r.stdout + r.stderr for r in runs)
    errors = [e for r in runs for e in r.errors]
    said = errors[0] if errors else f"exit codes {codes}"
    if any(c < 0 for c in codes) or "Traceback" in text:
        outcome = "crash"
    elif codes.count(0) == 2 or (0 in codes and not whole(out, codes.index(0))):
        outcome = "loss"
    elif sorted(codes) == [0, 2] and len(errors) == 1 and str(out) in errors[0] and len(errors[0]) < 600:
        outcome = "clear"
    else:
        outcome = "silent"
    return Outcome(case, outcome, max(codes), round(max(r.peak_mb for r in runs), 1), said.strip()[:300])


def _small_pt(path: Path, seed: int) -> Path:
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    torch.manual_seed(seed)
    return save_checkpoint(build_model("gelan-t", nc=2).eval(), path, imgsz=128)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _onnx_from(sources: list[Path]):
    def whole(out: Path, winner: int) -> bool:
        import onnx

        try:
            model = onnx.load(str(out))
        except Exception:
            return False
        props = {p.key: p.value for p in model.metadata_props}
        return props.get("source_sha256") == _sha(sources[winner])

    return whole


def export_pair(different: bool):
    def case(ctx: Context, d: Path) -> Outcome:
        a = _small_pt(d / "a.pt", 0)
        b = _small_pt(d / "b.pt", 1) if different else a
        out = d / "x.onnx"
        args = lambda src: ["export", str(src), "-o", str(out), "--imgsz", "128"]  # noqa: E731
        runs = _both(ctx, d, args(a), args(b))
        what = "a.pt and b.pt" if different else "one checkpoint twice"
        return _judge_pair(f"export: {what} to one x.onnx at once", runs, out, _onnx_from([a, b]))

    return case


def reparam_pair(fuse: bool):
    def case(ctx: Context, d: Path) -> Outcome:
        src = shutil.copy(EMBEDDED, d / "a.pt")
        out = d / "r.pt"
        runs = _both(ctx, d, ["reparam", str(src), str(out)], ["reparam", str(src), str(out), *(["--fuse"] if fuse else [])])

        def whole(path: Path, winner: int) -> bool:
            from y9train.checkpoints.load import read_checkpoint

            try:
                return bool(read_checkpoint(path)["config"]["fused"]) == (fuse and winner == 1)
            except Exception:
                return False

        return _judge_pair(f"reparam: two to one r.pt at once{' (one --fuse)' if fuse else ''}", runs, out, whole)

    return case


def engine_pair(ctx: Context, d: Path) -> Outcome:
    onnx = shutil.copy(ctx.onnx, d / "m.onnx")
    out = d / "m.engine"
    args = ["build-engine", str(onnx), "-o", str(out), "--target", "sm89", "--batch", "1:2:4"]
    runs = _both(ctx, d, args, args)

    def whole(path: Path, winner: int) -> bool:
        from y9deploy.engine.manifest import check_manifest, read_manifest

        try:
            man = read_manifest(path)
            check_manifest(path, flavour=man.flavour, version=man.trt_version, compute_capability=man.compute_capability)
        except Exception:
            return False
        return True

    return _judge_pair("build-engine: two to one m.engine at once", runs, out, whole)


def triton_pair(ctx: Context, d: Path) -> Outcome:
    out = d / "repo"
    args = ["triton", str(ctx.onnx), "-o", str(out), "--name", "m"]
    runs = _both(ctx, d, args, args)

    def whole(path: Path, winner: int) -> bool:
        return (path / "m" / "config.pbtxt").is_file() and (path / "m" / "1" / "model.onnx").is_file()

    return _judge_pair("triton: two to one repository at once", runs, out, whole)


WRITER_CASES = [
    ("two exports of a.pt and b.pt to one file (export)", export_pair(True)),
    ("two exports of one checkpoint to one file (export)", export_pair(False)),
    ("two reparams to one file (reparam)", reparam_pair(False)),
    ("two reparams to one file, one --fuse (reparam)", reparam_pair(True)),
    ("two engine builds to one file (build-engine)", engine_pair),
    ("two repositories in one folder (triton)", triton_pair),
]


# ------------------------------------------------------------------------------------------------ resume + YAML
def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def damaged_rng(part: str, change):
    def case(ctx: Context, d: Path) -> Outcome:
        run_dir = d / "run"
        shutil.copytree(trained_run(ctx, d / "ref"), run_dir)
        last = run_dir / "weights" / "last.pt"
        payload = torch.load(last, weights_only=True)
        change(payload["train"]["rng"])
        payload.pop("digest")  # the digest entry removed: only the state's own check can tell
        torch.save(payload, last)
        before = _snapshot(run_dir)
        run = ctx.y9(["train", "--resume", str(last), "--epochs", "2"], d, address_space=None)
        kept = _snapshot(run_dir) == before
        return judge(f"train --resume: rng {part} damaged", run, [str(last), f"train.rng.{part}"], expect="error",
                     intact=kept)  # fmt: skip

    return case


def _rules_tag(ctx: Context, d: Path) -> Outcome:
    rules = d / "rules.yaml"
    rules.write_text("regions:\n  r: {polygon: [[0, 0], [10, 0], [10, 10]]}\nrules:\n"
                     "  - {name: a, max: !!python/object/apply:os.system ['echo pwned']}\n")  # fmt: skip
    src = photos(d / "parts", 1)
    run = ctx.y9(["inspect", str(src), "-m", str(ctx.onnx), "-r", str(rules), "--project", str(d / "o")], d)
    kept = not [p for p in (d / "o").rglob("*") if p.is_file()]  # no file written (an empty project folder is left)
    return judge("inspect: a !!python tag on a single rules value", run, [str(rules), "!!python/object/apply"],
                 expect="error", intact=kept)  # fmt: skip


def _data_tag(ctx: Context, d: Path) -> Outcome:
    yml = coco_pair_dataset(d / "data")
    yml.write_text(yml.read_text().replace("nc: 80", "nc: !!python/name:os.system"))
    run = ctx.y9(["data", "check", str(yml), "--no-cache"], d)
    return judge("data check: a !!python tag on nc", run, [str(yml), "!!python/name:os.system"], expect="error")


def _hyp_tag(ctx: Context, d: Path) -> Outcome:
    yml = coco_pair_dataset(d / "data")
    hyp = d / "hyp.yaml"
    hyp.write_text("lr0: !!python/object/new:builtins.float [0.01]\n")
    run = ctx.y9(["train", "--data", str(yml), "--hyp", str(hyp), *TRAIN, "--project", str(d / "r")], d,
                 address_space=None)  # fmt: skip
    return judge("train: a !!python tag on lr0 in a hyp file", run, [str(hyp), "!!python/object/new"],
                 expect="error", intact=not [p for p in (d / "r").rglob("*") if p.is_file()])  # fmt: skip


RESUME_YAML_CASES = [
    ("resume of a last.pt whose torch RNG state is cut, digest removed (train)",
     damaged_rng("torch", lambda rng: rng.update(torch=rng["torch"][:100]))),
    ("resume of a last.pt whose numpy RNG keys are cut, digest removed (train)",
     damaged_rng("numpy", lambda rng: rng["numpy"].update(keys=rng["numpy"]["keys"][:10]))),
    ("resume of a last.pt without a python RNG state, digest removed (train)",
     damaged_rng("python", lambda rng: rng.pop("python"))),
    ("!!python tag on a single rules value (inspect)", _rules_tag),
    ("!!python tag on a data.yaml value (data check)", _data_tag),
    ("!!python tag on a hyp value (train)", _hyp_tag),
]  # fmt: skip
