"""The hostile inputs and faults of issue 34 items 3, 4, 5, 8 and 9, for ``bench_faults.py``: each case builds its
files in a fresh folder, runs the real ``y9`` command in a child process (``tests/reliability/bounded_run.py``:
address-space and file-size limits, peak resident memory measured in the child) and says what the user got.

Outcome of a case:
- ``crash``: a traceback, a kill, a run past its time limit, or, in a bomb case, a peak resident memory over
  ``BOUND_MB`` (training: over ``BOUND_MB`` more than a clean 1-epoch run's, torch itself taking about 600 MB);
- ``loss``: something written before is damaged or gone (a JSON line cut in half, a last.pt that no longer loads);
- ``silent``: the command ends without naming the file and what is wrong with it;
- ``clear``: the expected sentence: an ``error:`` line naming the file (exit 2), or a skip / warning naming it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from tests.conftest import TEST_DATA
from tests.reliability.bounded_run import Run, run_y9
from tests.reliability.hostile_images import jpeg_bomb, png_bomb, scrambled_jpeg
from tests.train.data_fixtures import COCO_36, coco_pair_dataset

BOUND_MB = 500
PHOTOS = sorted(TEST_DATA.glob("*.jpg"))
TRAIN = [
    "--model",
    "gelan-t",
    "--epochs",
    "1",
    "--imgsz",
    "64",
    "--batch",
    "2",
    "--device",
    "cpu",
    "--workers",
    "0",
]


@dataclass
class Context:
    """What the cases share: the checkout whose y9 runs, a tiny ONNX detector, and a finished 1-epoch run."""

    code: Path
    onnx: Path
    trained: Path | None = None  # a run folder (weights/last.pt), made on first use
    trained_peak_mb: float = float("nan")  # that run's peak resident memory

    def y9(self, args: list[str], where: Path, **kw) -> Run:
        return run_y9(args, where, code=self.code, timeout=kw.pop("timeout", 600), **kw)


@dataclass(frozen=True)
class Outcome:
    case: str
    outcome: str  # crash, loss, silent, clear
    exit_code: int
    peak_mb: float
    said: str  # the first error line, or the line naming the file


def judge(
    case: str,
    run: Run,
    needles: list[str],
    *,
    expect: str,
    intact: bool = True,
    bound_mb: float | None = None,
) -> Outcome:
    """The outcome of ``run`` (module docstring); ``needles``: what the sentence must hold (the file's path ...);
    ``expect``: ``error`` (exit 2, one error line) or ``report`` (exit 0 or 1, a skip or warning line);
    ``bound_mb``: the peak memory allowed (bomb cases)."""
    text = run.stdout + "\n" + run.stderr
    flat = " ".join(text.split())
    said = next(
        (ln for ln in text.splitlines() if needles and needles[0] in ln), run.errors[0] if run.errors else ""
    )
    if run.returncode < 0 or "Traceback" in text or (bound_mb is not None and not run.peak_mb < bound_mb):
        outcome = "crash"
    elif not intact:
        outcome = "loss"
    elif expect == "error":
        one = len(run.errors) == 1 and len(run.errors[0]) < 600
        outcome = (
            "clear" if run.returncode == 2 and one and all(n in run.errors[0] for n in needles) else "silent"
        )
    else:
        outcome = "clear" if run.returncode in (0, 1) and all(n in flat for n in needles) else "silent"
    return Outcome(case, outcome, run.returncode, round(run.peak_mb, 1), said.strip()[:300])


def photos(folder: Path, n: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for p in PHOTOS[:n]:
        shutil.copy(p, folder / p.name)
    return folder


# ------------------------------------------------------------------------------------------------ images (34.3)
def _predict_with(ctx: Context, d: Path, name: str, data: bytes, words: str) -> Outcome:
    src = photos(d / "src")
    (src / name).write_bytes(data)
    run = ctx.y9(["predict", str(src), "-m", str(ctx.onnx), "--save-dir", str(d / "out")], d)
    done = (d / "out" / "predictions.jsonl").is_file() and len(
        (d / "out" / "predictions.jsonl").read_text().splitlines()) == 3  # fmt: skip
    return judge(
        f"predict: {name}", run, [str(src / name), words], expect="report", intact=done, bound_mb=BOUND_MB
    )


def _check_with(
    ctx: Context, d: Path, name: str, data: bytes, words: str, command: str = "data check"
) -> Outcome:
    yml = coco_pair_dataset(d / "data")
    (d / "data" / "images" / "train" / name).write_bytes(data)
    args = ["data", "check", str(yml), "--no-cache"] if command == "data check" else \
        ["train", "--data", str(yml), *TRAIN, "--project", str(d / "runs"), "--name", "r"]  # fmt: skip
    train = command == "train"
    run = ctx.y9(args, d, address_space=None if train else 3 << 30)
    bound = trained_peak(ctx, d / "ref") + BOUND_MB if train else BOUND_MB
    return judge(f"{command}: {name}", run, [name, words], expect="report", bound_mb=bound)


def _corrupt_video(path: Path) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, (64, 48))
    rng = np.random.default_rng(0)
    for _ in range(60):
        writer.write(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))
    writer.release()
    data = bytearray(path.read_bytes())
    index = data.find(b"moov")
    data[index // 3 : 2 * index // 3] = bytes(index // 3)
    path.write_bytes(bytes(data))
    return path


def video_corrupt_middle(ctx: Context, d: Path) -> Outcome:
    video = _corrupt_video(d / "line.mp4")
    run = ctx.y9(["predict", str(video), "-m", str(ctx.onnx), "--save-dir", str(d / "out")], d)
    return judge("predict: mp4 with a corrupt middle", run, [str(video), "of the 60 frames"], expect="report")


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


IMAGE_CASES: list[tuple[str, Callable[[Context, Path], Outcome]]] = [
    ("jpeg bomb 60000x60000 (predict)", lambda c, d: _predict_with(c, d, "bomb.jpg", jpeg_bomb(60000, 60000),
                                                                   "pixels, more than the limit")),
    ("jpeg bomb 30000x30000 (predict)", lambda c, d: _predict_with(c, d, "bomb.jpg", jpeg_bomb(30000, 30000),
                                                                   "pixels, more than the limit")),
    ("png bomb 20000x20000 (predict)", lambda c, d: _predict_with(c, d, "bomb.png", png_bomb(20000, 20000),
                                                                  "pixels, more than the limit")),
    ("truncated jpeg (predict)", lambda c, d: _predict_with(c, d, "cut.jpg", _cut(COCO_36.read_bytes()),
                                                            "cut short")),
    ("corrupt jpeg data (predict)", lambda c, d: _predict_with(c, d, "bad.jpg", scrambled_jpeg(COCO_36.read_bytes()),
                                                               "corrupt JPEG data")),
    ("truncated png (predict)", lambda c, d: _predict_with(
        c, d, "cut.png", _cut(cv2.imencode(".png", cv2.imread(str(COCO_36)))[1].tobytes()), "cut short")),
    ("jpeg bomb 60000x60000 (data check)", lambda c, d: _check_with(c, d, "bomb.jpg", jpeg_bomb(60000, 60000),
                                                                    "more than the limit")),
    ("jpeg bomb 30000x30000 (data check)", lambda c, d: _check_with(c, d, "bomb.jpg", jpeg_bomb(30000, 30000),
                                                                    "more than the limit")),
    ("jpeg bomb 60000x60000 (train)", lambda c, d: _check_with(c, d, "bomb.jpg", jpeg_bomb(60000, 60000),
                                                               "more than the limit", "train")),
    ("mp4 with a corrupt middle (predict)", video_corrupt_middle),
]  # fmt: skip


# ------------------------------------------------------------------------------------------------ disk (34.4)
def predict_fsize_jsonl(ctx: Context, d: Path) -> Outcome:
    src, out = photos(d / "src", 8), d / "out"
    run = ctx.y9(["predict", str(src), "-m", str(ctx.onnx), "--save-dir", str(out), "--no-images"], d,
                 file_size=30_000)  # fmt: skip
    lines = (
        (out / "predictions.jsonl").read_text().splitlines() if (out / "predictions.jsonl").is_file() else []
    )
    try:
        whole = all(json.loads(s) for s in lines)
    except json.JSONDecodeError:
        whole = False
    return judge("predict under ulimit -f: predictions.jsonl", run, [str(out / "predictions.jsonl")],
                 expect="error", intact=whole)  # fmt: skip


def predict_fsize_image(ctx: Context, d: Path) -> Outcome:
    src, out = photos(d / "src"), d / "out"
    run = ctx.y9(["predict", str(src), "-m", str(ctx.onnx), "--save-dir", str(out)], d, file_size=100_000)
    written = [p for p in out.glob("*.jpg")]
    whole = all(cv2.imread(str(p)) is not None for p in written) and not list(out.glob(".*.tmp"))
    return judge("predict under ulimit -f: annotated image", run, [str(out)], expect="error", intact=whole)


def trained_run(ctx: Context, d: Path) -> Path:
    if ctx.trained is None:
        yml = coco_pair_dataset(d / "data")
        run = ctx.y9(["train", "--data", str(yml), *TRAIN, "--project", str(d / "runs"), "--name", "a"], d,
                     address_space=None)  # fmt: skip
        if run.returncode != 0:
            raise RuntimeError(f"the reference run failed: {run.stderr[-2000:]}")
        ctx.trained, ctx.trained_peak_mb = d / "runs" / "a", run.peak_mb
    return ctx.trained


def trained_peak(ctx: Context, d: Path) -> float:
    trained_run(ctx, d)
    return ctx.trained_peak_mb


def train_fsize(ctx: Context, d: Path) -> Outcome:
    run_dir = d / "run"
    shutil.copytree(trained_run(ctx, d / "ref"), run_dir)
    last = run_dir / "weights" / "last.pt"
    before = last.read_bytes()
    run = ctx.y9(["train", "--resume", str(last), "--epochs", "2"], d, address_space=None, file_size=20 << 20)
    kept = last.read_bytes() == before and not [p for p in run_dir.rglob("*") if ".tmp" in p.name]
    return judge("train --resume under ulimit -f", run, ["last.pt"], expect="error", intact=kept)


DISK_CASES = [
    ("predict under ulimit -f (JSON lines)", predict_fsize_jsonl),
    ("predict under ulimit -f (annotated image)", predict_fsize_image),
    ("train --resume under ulimit -f (last.pt)", train_fsize),
]


# ------------------------------------------------------------------------------------------------ caches (34.5)
def damaged_cache(how: str, command: str) -> Callable[[Context, Path], Outcome]:
    def case(ctx: Context, d: Path) -> Outcome:
        yml = coco_pair_dataset(d / "data")
        env = {"Y9_CACHE_DIR": str(d / "cache")}
        first = ctx.y9(["data", "check", str(yml)], d, env=env)
        assert first.returncode == 0, first.stderr
        (cache,) = (d / "cache").rglob("train.y9cache.npz")
        data = bytearray(cache.read_bytes())
        if how == "cut":
            data = data[: len(data) // 2]
        else:
            data[len(data) // 2] ^= 0x40
        cache.write_bytes(bytes(data))
        args = ["data", "check", str(yml)] if command == "data check" else \
            ["train", "--data", str(yml), *TRAIN, "--project", str(d / "runs"), "--name", "r"]  # fmt: skip
        run = ctx.y9(args, d, env=env, address_space=None)
        return judge(f"{command}: label cache {how}", run, [str(cache), "is damaged"], expect="report")

    return case


CACHE_CASES = [
    ("label cache cut short (data check)", damaged_cache("cut", "data check")),
    ("label cache bit-flipped (data check)", damaged_cache("flipped", "data check")),
    ("label cache cut short (train)", damaged_cache("cut", "train")),
]
