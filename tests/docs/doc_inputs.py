"""How the guides' commands are run on a CPU-only test machine: the substitutions and the small inputs.

Every rule is a row of one of the tables below, with the reason, so that what the docs test changes is visible
and easy to extend (a new guide with a new big input: add a row).

- ``SKIP_COMMANDS``: commands that are never run (they set up a machine), by exact text.
- ``REWRITES``: option values shrunk or pinned (``--imgsz 640`` -> 64, ...), applied to a ``y9`` command's words.
- ``APPENDS``: options added to a ``y9`` command that lacks them (``--target sm89`` for engine builds, ...).
- ``INPUTS``: files the commands read that the guide assumes the reader has (``best.pt``, ``photos/``, ...):
  when a ``y9`` command names a missing input, a small stand-in is made under that name before it runs.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# Shrunk sizes: the test model is trained/exported at 64x64 (its images letterboxed to it).
SIZE = 64

SKIP_COMMANDS: dict[str, str] = {
    "make demo": "sets up .venv (pip installs) and runs the demo: the test already runs inside that venv",
    "make test": "sets up .venv and runs the whole test suite, this test included",
    "git clone <this repository> y9 && cd y9": "clones the repository this test runs in",
}

# A command without these words is run as it is. ``. .venv/bin/activate``: the venv's bin is on PATH already.
REPLACE_COMMANDS: dict[str, tuple[str, str]] = {
    ". .venv/bin/activate": ("true", "the test runs with the venv's bin first on PATH"),
}


@dataclass(frozen=True)
class Rewrite:
    option: str  # the option whose value changes
    pattern: str  # regex the whole value must match
    value: str  # the new value
    reason: str
    commands: tuple[str, ...] = ()  # y9 sub-commands it applies to (empty: all)


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("--imgsz", r"\d+", str(SIZE), "sizes shrink to 64 px (a 640 export or training takes minutes here)"),
    Rewrite("--imgsz", r"\d+,\d+", f"{SIZE},{SIZE + 32}", "rectangular sizes shrink like square ones"),
    Rewrite("--tile", r"\d+", str(SIZE), "the tile is the model's input size (64 here)"),
    Rewrite("--epochs", r"\d+", "1", "one epoch shows the command works"),
    Rewrite("--batch", r"\d+", "2", "training batches of the two test images", ("train", "val")),
    Rewrite("--device", r"\d+(,\d+)*", "cpu", "no GPU on the test machine"),
    Rewrite("--model", r"yolov9-[smce]|gelan-[smce]", "gelan-t", "the smallest architecture trains in seconds",
            ("train",)),
)


# key=value overrides of `y9 train` rewritten whole.
KEY_VALUES: tuple[Rewrite, ...] = (
    Rewrite("", r"epochs=\d+", "epochs=2", "extends the one-epoch test run by one epoch", ("train",)),
)


@dataclass(frozen=True)
class Append:
    command: str  # y9 sub-command
    option: str  # added when missing
    values: tuple[str, ...]
    reason: str
    unless: str = ""  # not added when the command has this word


APPENDS: tuple[Append, ...] = (
    Append("export", "--imgsz", (str(SIZE),), "the test model is exported at 64x64, not at its trained size"),
    Append("build-engine", "--target", ("sm89",),
           "no GPU here: TensorRT-RTX builds the engine ahead of time for sm89 (RTX 4090) on the CPU"),
    Append("benchmark", "--iters", ("3",), "timing figures are not checked, the command is"),
    Append("benchmark", "--warmup", ("1",), "as --iters"),
    Append("benchmark", "--frame", ("120x160",), "a small synthetic frame (letterboxed to 64 anyway)"),
    Append("train", "--workers", ("0",), "no loader processes on a 2-core test machine"),
    Append("train", "--epochs", ("1",), "one epoch shows the command works", unless="--resume"),
    Append("train", "--imgsz", (str(SIZE),), "the test images are trained at 64x64", unless="--resume"),
    Append("train", "--batch", ("2",), "the two test images", unless="--resume"),
    Append("train", "plots=false", (), "no pictures (results.png, labels, the val curves): the command is checked, "
           "not its pictures (drawn and checked in tests/train/test_trainer.py); a resumed run keeps its run's setting",
           unless="--resume"),
    Append("val", "--workers", ("0",), "as for train"),
    Append("val", "--no-plots", (), "no curves or confusion matrix: the command is checked, not its pictures (drawn "
           "and checked in tests/core/test_val_plots.py and tests/deploy/test_val_report.py)"),
    Append("val", "--imgsz", (str(SIZE),), "validated at 64x64 like the rest (the embedded model's 416 takes seconds)"),
)

# The guides run scripts of the repository from its root (`python benchmarks/...`); the test runs in a temporary
# folder, so the script's path is made absolute (the interpreter is the venv's `python`, first on PATH).
REPO = Path(__file__).resolve().parents[2]
REPO_SCRIPTS = {"benchmarks", "samples"}
REPO_SCRIPTS_REASON = "the guide runs it from the repository root; the test runs in a temporary folder"

# Engines run only on the GPU they were built for (none here): the commands that run a model use the ONNX file
# the engine was built from (same folder, same stem), the way the guides build them.
RUN_COMMANDS = {"predict", "benchmark", "inspect"}
ENGINE_REASON = "an engine runs only on its GPU (none here): the ONNX it was built from runs instead"

# Sources that need a live camera or stream: a short video file stands in, a few frames of it.
STREAM = re.compile(r"^(rtsp|rtsps|rtmp|http|https|udp|tcp)://")
STREAM_REASON = "no camera or stream server here: a short video file stands in (streams: tests/deploy/test_video_pipeline.py)"

# Options whose value is a file the command reads (for INPUTS); the first positional word is the source (all of
# them for benchmark). Only words that look like paths (a suffix, or a trailing / for a folder) get stand-ins.
INPUT_OPTIONS = {"--model", "-m", "--rules", "-r", "--data", "--source", "--check-images", "--verify", "--reference"}


@cache
def _flags(path: tuple[str, ...]) -> frozenset[str]:
    """The options of ``y9 <path>`` that take no value, read from the typer app (so positionals are found)."""
    import typer.main

    from y9cli.app import app

    cmd = typer.main.get_command(app)
    flags = {o for p in cmd.params if getattr(p, "is_flag", False) for o in (*p.opts, *p.secondary_opts)}
    for name in path:
        cmd = getattr(cmd, "commands", {}).get(name)
        if cmd is None:
            return frozenset(flags)
        for p in cmd.params:
            if getattr(p, "is_flag", False) or getattr(p, "count", False):
                flags.update((*p.opts, *p.secondary_opts))
    return frozenset(flags | {"--help"})


@dataclass(frozen=True)
class Input:
    pattern: str  # fnmatch pattern of the path as written in the command
    make: str  # name of a Stand-ins method: (path) -> None
    reason: str


INPUTS: tuple[Input, ...] = (
    Input("yolov9-*.pt", "dual_checkpoint", "a yolov9 checkpoint (auxiliary branch): random yolov9-t weights"),
    Input("*.pt", "checkpoint", "a checkpoint: the embedded model when the package has one, else a random gelan-t"),
    Input("*.onnx", "onnx", "an ONNX model: the test checkpoint exported once at 64x64 with a dynamic batch"),
    Input("*.engine", "engine", "an engine: that ONNX built ahead of time for sm89 (1:4:8), with its manifest"),
    Input("*.mp4", "video", "a video: 6 frames of the COCO test images, 160x120"),
    Input("*.jpg", "image", "an image: a COCO test image"),
    Input("*.png", "image", "as *.jpg"),
    Input("rules.yaml", "rules", "inspection rules that any image passes (class names of the test model)"),
    Input("gate.yaml", "gate_rules", "the counting-gate rules of docs/inspection.md (its inspection-gate-rules block)"),
    Input("*.yaml", "data_yaml", "a dataset: the two COCO test images with their labels, as train and val"),
    Input("*", "image_folder", "a folder of images: the two COCO test images"),
)


def _positionals(words: list[str]) -> list[int]:
    """Indices of the positional words of ``y9 SUB ...`` (words[0] == 'y9')."""
    out, i = [], 2
    if len(words) > 2 and words[1] == "data":
        i = 3
    flags = _flags(tuple(words[1:i]))
    while i < len(words):
        w = words[i]
        if w.startswith("-"):
            i += 1 if (w in flags or "=" in w) else 2
            continue
        if "=" in w:  # key=value overrides of y9 train
            i += 1
            continue
        out.append(i)
        i += 1
    return out


@dataclass
class Prepared:
    text: str  # what is run (bash -c)
    changes: list[str]  # what was changed and why, for the report
    inputs: list[str]  # input paths the command reads (stand-ins are made for the missing ones)


def prepare(text: str) -> Prepared | str:
    """The command to run for one guide command, or the reason it is skipped."""
    bare = text.split("  #")[0].strip()
    for skipped, reason in SKIP_COMMANDS.items():
        if bare == skipped:
            return reason
    if bare in REPLACE_COMMANDS:
        new, reason = REPLACE_COMMANDS[bare]
        return Prepared(new, [f"{bare!r} -> {new!r}: {reason}"], [])
    words = shlex.split(text, comments=True)
    if len(words) > 1 and words[0] in {"python", "python3"} and words[1].split("/")[0] in REPO_SCRIPTS:
        changes = [f"{words[1]} -> {REPO / words[1]}: {REPO_SCRIPTS_REASON}"]
        words[1] = str(REPO / words[1])
        for ap in APPENDS:
            if ap.command == Path(words[1]).name and ap.option not in words:
                words += [ap.option, *ap.values]
                changes.append(f"+ {ap.option} {' '.join(ap.values)}: {ap.reason}")
        inputs = [words[i + 1] for i, w in enumerate(words[:-1]) if w in INPUT_OPTIONS]
        return Prepared(shlex.join(words), changes, inputs)
    if not words or words[0] != "y9" or len(words) < 2:
        return Prepared(shlex.join(words), [], [])
    sub = words[1]
    changes: list[str] = []
    for i in range(2, len(words) - 1):
        for rw in REWRITES:
            applies = words[i] == rw.option and (not rw.commands or sub in rw.commands)
            if applies and re.fullmatch(rw.pattern, words[i + 1]) and words[i + 1] != rw.value:
                changes.append(f"{rw.option} {words[i + 1]} -> {rw.value}: {rw.reason}")
                words[i + 1] = rw.value
                break
    for i, w in enumerate(words):
        for kv in KEY_VALUES:
            if sub in kv.commands and re.fullmatch(kv.pattern, w) and w != kv.value:
                changes.append(f"{w} -> {kv.value}: {kv.reason}")
                words[i] = kv.value
    for ap in APPENDS:
        if sub == ap.command and ap.option not in words and not (ap.unless and ap.unless in words):
            words += [ap.option, *ap.values]
            changes.append(f"+ {ap.option} {' '.join(ap.values)}: {ap.reason}")
    positions = _positionals(words)
    inputs: list[int] = list(positions) if sub == "benchmark" else positions[:1]
    inputs += [i + 1 for i, w in enumerate(words[:-1]) if w in INPUT_OPTIONS]
    for i in inputs:
        if STREAM.match(words[i]) or (sub == "predict" and i == positions[0] and words[i].isdigit()):
            changes.append(f"{words[i]} -> stream.mp4 --max-frames 4: {STREAM_REASON}")
            words[i] = "stream.mp4"
            if "--max-frames" not in words:
                words += ["--max-frames", "4"]
        elif sub in RUN_COMMANDS and words[i].endswith(".engine"):
            onnx = words[i][: -len(".engine")] + ".onnx"
            changes.append(f"{words[i]} -> {onnx}: {ENGINE_REASON}")
            words[i] = onnx
    paths = [words[i] for i in inputs if words[i].endswith("/") or Path(words[i]).suffix]
    return Prepared(shlex.join(words), changes, paths)


def stand_in_for(path: str) -> Input:
    name = Path(path.rstrip("/")).name
    for entry in INPUTS:
        if fnmatch.fnmatch(name, entry.pattern):
            return entry
    raise AssertionError(path)  # the last pattern matches everything


class StandIns:
    """Makes the small inputs (each expensive one once per test session, then copied)."""

    def __init__(self, repo: Path, cache: Path):
        self.repo, self.cache = repo, cache
        cache.mkdir(parents=True, exist_ok=True)
        self.images = [repo / "tests" / "data" / n for n in ("000000000036.jpg", "000000000042.jpg")]
        self.made: list[str] = []

    def make(self, cwd: Path, written: str) -> str | None:
        """Make the missing input ``written`` (as the command writes it) in ``cwd``; a description, or None."""
        target = cwd / written
        if target.exists() or STREAM.match(written):
            return None
        entry = stand_in_for(written)
        target.parent.mkdir(parents=True, exist_ok=True)
        getattr(self, entry.make)(target)
        note = f"{written}: {entry.reason}"
        self.made.append(note)
        return note

    def _cached(self, name: str, build: Callable[[Path], None]) -> Path:
        path = self.cache / name
        if not path.exists():
            build(path)
        return path

    # -- models ---------------------------------------------------------------------------------------------
    def _checkpoint(self, path: Path) -> None:
        import y9deploy

        embedded = getattr(y9deploy, "default_model_path", None)
        if embedded is not None and Path(embedded()).is_file():
            shutil.copyfile(embedded(), path)
            return
        self._random_checkpoint("gelan-t", path)

    @staticmethod
    def _random_checkpoint(name: str, path: Path) -> None:
        import torch

        from y9train.checkpoints.load import save_checkpoint
        from y9train.models import build_model

        torch.manual_seed(0)
        save_checkpoint(build_model(name).eval(), path, imgsz=SIZE)

    def checkpoint(self, target: Path) -> None:
        shutil.copyfile(self._cached("model.pt", self._checkpoint), target)

    def dual_checkpoint(self, target: Path) -> None:
        shutil.copyfile(self._cached("yolov9-t.pt", lambda p: self._random_checkpoint("yolov9-t", p)), target)

    def _onnx(self, path: Path) -> None:
        from y9deploy import export_onnx

        export_onnx(self._cached("model.pt", self._checkpoint), path, imgsz=SIZE, dynamic_batch=True)

    def onnx(self, target: Path) -> None:
        shutil.copyfile(self._cached("model.onnx", self._onnx), target)

    def _engine(self, path: Path) -> None:
        from y9deploy import build_engine

        build_engine(self._cached("model.onnx", self._onnx), path, fp16=True, batch=(1, 4, 8), target="sm89")

    def engine(self, target: Path) -> None:
        source = self._cached("model.engine", self._engine)
        shutil.copyfile(source, target)
        shutil.copyfile(source.with_name(source.name + ".json"), target.with_name(target.name + ".json"))
        # The commands that run it use the ONNX it was built from, beside it (see ENGINE_REASON).
        onnx = target.with_suffix(".onnx")
        if not onnx.exists():
            self.onnx(onnx)

    # -- data -----------------------------------------------------------------------------------------------
    def image(self, target: Path) -> None:
        import cv2

        img = cv2.imread(str(self.images[0]))
        ok = cv2.imwrite(str(target), img)
        assert ok, target

    def image_folder(self, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        for img in self.images:
            shutil.copyfile(img, target / img.name)

    def video(self, target: Path) -> None:
        import cv2

        writer = cv2.VideoWriter(str(target), cv2.VideoWriter_fourcc(*"mp4v"), 10, (160, 120))
        assert writer.isOpened(), target
        for i in range(6):
            writer.write(cv2.resize(cv2.imread(str(self.images[i % len(self.images)])), (160, 120)))
        writer.release()

    def rules(self, target: Path) -> None:
        target.write_text(
            "version: 1\nthresholds:\n  default: {min_conf: 0.25}\n"
            "rules:\n  - {name: at most 1000 detections, max: 1000}\n",
            encoding="utf-8",
        )

    def gate_rules(self, target: Path) -> None:
        doc = (self.repo / "docs" / "inspection.md").read_text(encoding="utf-8")
        block = doc.split("<!-- inspection-gate-rules -->", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
        target.write_text(block, encoding="utf-8")

    def data_yaml(self, target: Path) -> None:
        root = target.parent / "data"
        for split in ("train", "val"):
            (root / "images" / split).mkdir(parents=True, exist_ok=True)
            (root / "labels" / split).mkdir(parents=True, exist_ok=True)
            for img in self.images:
                shutil.copyfile(img, root / "images" / split / img.name)
                shutil.copyfile(img.with_suffix(".txt"), root / "labels" / split / (img.stem + ".txt"))
        names = "".join(f"  {i}: class{i}\n" for i in range(80))
        target.write_text(f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n{names}", encoding="utf-8")
