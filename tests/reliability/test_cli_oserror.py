"""Every `y9` command, with a read-only output folder and with an output path under an existing file (and the
commands that write nothing with an unreadable or misplaced input): one sentence on stderr, a non-zero exit,
no traceback, and no temporary file left behind. A full disk (ENOSPC) says so.

The CLI runs in-process through its real entry point (``y9cli.app.main``). Folders are made read-only
with chmod; as root (where chmod does not bind) the command runs without root's permission-bypass
capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so the modes bind as they would for any user.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import shared_path
from y9cli.app import main

_CAP_VERSION_3 = 0x20080522
_DAC_CAPS = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: root's bypass of file permissions


def _capabilities(set_effective: int | None = None) -> int:
    """This thread's effective capability mask (first 32 bits); with ``set_effective``, set it first."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} words
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    if set_effective is not None:
        data[0] = set_effective
        if libc.capset(header, data) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")
    return int(data[0])


@contextlib.contextmanager
def unprivileged():
    """Let file permissions bind: as root, drop the permission-bypass capabilities of this thread meanwhile."""
    if os.geteuid() != 0:
        yield
        return
    before = _capabilities()
    _capabilities(before & ~_DAC_CAPS)
    try:
        yield
    finally:
        _capabilities(before)


@pytest.fixture(scope="module")
def world():
    """Inputs readable by everyone, a read-only folder, a locked folder and a plain file named like a folder."""
    import torch  # noqa: F401 - imported as root, before any unprivileged call

    from y9deploy.export.onnx_export import export_onnx_report
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    coco8 = shared_path("datasets", "coco8", "data.yaml")
    base = Path(tempfile.mkdtemp(prefix="y9-cli-faults-"))
    base.chmod(0o755)
    inputs = base / "in"
    inputs.mkdir(mode=0o755)
    ckpt = save_checkpoint(build_model("gelan-t", nc=80), inputs / "g.pt", imgsz=64)
    onnx = export_onnx_report(ckpt, inputs / "g.onnx", imgsz=64, simplify=False, check=False).path
    vd = inputs / "visdrone"
    (vd / "images").mkdir(parents=True)
    (vd / "annotations").mkdir()
    image = sorted((coco8.parent / "images" / "val").iterdir())[0]
    shutil.copy(image, vd / "images" / "a.jpg")
    (vd / "annotations" / "a.txt").write_text("10,10,40,30,1,4,0,0\n")
    (inputs / "rules.yaml").write_text("rules:\n  - name: at most nine\n    max: 9\n")
    for p in [inputs, *inputs.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    ro = base / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    locked = base / "locked"
    locked.mkdir()
    shutil.copy(onnx, locked / "g.onnx")
    locked.chmod(0o000)
    afile = base / "afile"
    afile.write_text("not a folder\n")
    afile.chmod(0o644)
    cache = base / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    with unprivileged(), pytest.raises(PermissionError):  # the read-only folder binds the unprivileged runs
        (ro / "probe").write_text("x")
    yield {"base": base, "ckpt": ckpt, "onnx": onnx, "data": coco8, "vd": vd, "ro": ro, "locked": locked,
           "afile": afile, "cache": cache, "rules": inputs / "rules.yaml", "images": coco8.parent / "images" / "val"}  # fmt: skip
    locked.chmod(0o755)
    ro.chmod(0o755)
    shutil.rmtree(base, ignore_errors=True)


TRAIN = "--model gelan-t --epochs 1 --imgsz 64 --batch 2 --device cpu --workers 0"
# (command, argument template, how the output is broken); {ro}: a read-only folder, {afile}: a plain file.
CASES = [
    ("info", "info {locked}/g.onnx", "unreadable input"),
    ("info", "info {afile}/g.onnx", "input under a file"),
    # the label cache is optional: `data check` warns with the path and goes on (see the test below)
    ("convert visdrone", "convert visdrone {vd} {ro}/vd", "read-only output"),
    ("convert visdrone", "convert visdrone {vd} {afile}/vd", "output under a file"),
    ("bench-data", "bench-data {data} --cache-dir {ro}/c --cache disk --imgsz 64 --batch 2 --workers 0 "
     "--batches 1 --warmup 0", "read-only output"),  # fmt: skip
    ("bench-data", "bench-data {data} --cache-dir {afile}/c --cache disk --imgsz 64 --batch 2 --workers 0 "
     "--batches 1 --warmup 0", "output under a file"),  # fmt: skip
    ("reparam", "reparam {ckpt} {ro}/r.pt", "read-only output"),
    ("reparam", "reparam {ckpt} {afile}/r.pt", "output under a file"),
    ("build-engine", "build-engine {onnx} -o {ro}/g.engine --target sm89", "read-only output"),
    ("build-engine", "build-engine {onnx} -o {afile}/g.engine --target sm89", "output under a file"),
    ("export", "export {ckpt} -o {ro}/g.onnx --imgsz 64 --no-check --no-simplify", "read-only output"),
    ("export", "export {ckpt} -o {afile}/g.onnx --imgsz 64 --no-check --no-simplify", "output under a file"),
    ("predict", "predict {images} --model {onnx} --save-dir {ro}/pred", "read-only output"),
    ("predict", "predict {images} --model {onnx} --save-dir {afile}", "output under a file"),
    ("benchmark", "benchmark {onnx} --iters 1 --warmup 0 --frame 64x64 --json {ro}/b.json", "read-only output"),
    ("benchmark", "benchmark {onnx} --iters 1 --warmup 0 --frame 64x64 --json {afile}/b.json", "output under a file"),
    ("train", "train --data {data} " + TRAIN + " --project {ro}/runs", "read-only output"),
    ("train", "train --data {data} " + TRAIN + " --project {afile}", "output under a file"),
    ("val", "val --data {data} --model {locked}/g.pt --imgsz 64 --device cpu --workers 0", "unreadable input"),
    ("val", "val --data {data} --model {afile}/g.pt --imgsz 64 --device cpu --workers 0", "input under a file"),
    ("inspect", "inspect {images} --model {onnx} --rules {rules} --out {ro}/audit", "read-only output"),
    ("inspect", "inspect {images} --model {onnx} --rules {rules} --out {afile}/audit", "output under a file"),
    ("triton", "triton {onnx} --out {ro}/repo", "read-only output"),
    ("triton", "triton {onnx} --out {afile}/repo", "output under a file"),
]  # fmt: skip


def run_cli(argv: list[str], capsys, *, as_nobody: bool) -> tuple[int, str]:
    with unprivileged() if as_nobody else contextlib.nullcontext():
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out + out.err


def _leftovers(base: Path) -> list[str]:
    return [str(p) for p in base.rglob("*.tmp") if "locked" not in p.parts]


@pytest.mark.parametrize("command, template, how", CASES, ids=[f"{c}: {h}" for c, _, h in CASES])
def test_each_command_fails_with_one_sentence(world, command, template, how, capsys, monkeypatch):
    monkeypatch.setenv("Y9_CACHE_DIR", str(world["cache"]))
    monkeypatch.chdir(world["base"])
    argv = template.format(**{k: str(v) for k, v in world.items()}).split()
    code, text = run_cli(argv, capsys, as_nobody=how in ("read-only output", "unreadable input"))
    assert "Traceback" not in text, text
    assert code != 0, text
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, text
    broken = world["locked"] if "unreadable" in how else world["ro"] if "read-only" in how else world["afile"]
    assert str(broken) in errors[0], errors[0]
    assert _leftovers(world["base"]) == []


@pytest.mark.parametrize(
    "folder",
    [
        "ro",
        "afile",
    ],
)  # fmt: skip
def test_data_check_warns_about_an_unwritable_cache_and_goes_on(world, folder, capsys, caplog, monkeypatch):
    monkeypatch.chdir(world["base"])
    cache = world[folder] / "cache"
    code, text = run_cli(
        ["data", "check", str(world["data"]), "--cache-dir", str(cache)], capsys, as_nobody=True
    )
    assert "Traceback" not in text and code == 0, text
    assert "val " in text and "boxes per class" in text  # the check itself ran
    warned = [r.getMessage() for r in caplog.records if "could not write the label cache" in r.getMessage()]
    assert warned and all(str(cache) in w for w in warned), caplog.text
    assert _leftovers(world["base"]) == []


def test_every_command_is_covered():
    """The cases cover every command `y9 --help` lists (data check and doctor have their own tests)."""
    from typer.main import get_command

    from y9cli.app import app

    group = get_command(app)
    names = set()
    for name, cmd in group.commands.items():
        names |= {f"{name} {sub}" for sub in getattr(cmd, "commands", {})} or {name}
    assert names - {c for c, _, _ in CASES} == {"doctor", "data check"}


def test_doctor_in_a_read_only_folder(world, capsys, monkeypatch):
    monkeypatch.chdir(world["ro"])
    code, text = run_cli(["doctor", "--json"], capsys, as_nobody=True)
    assert code == 0 and "Traceback" not in text and '"verdicts"' in text


def test_export_refuses_to_write_over_its_checkpoint(world, tmp_path, capsys):
    ckpt = tmp_path / "g.pt"
    shutil.copy(world["ckpt"], ckpt)
    before = ckpt.read_bytes()
    code, text = run_cli(["export", str(ckpt), "-o", str(ckpt), "--imgsz", "64"], capsys, as_nobody=False)
    assert code == 2 and "Traceback" not in text
    # refused before anything is opened: an ONNX is never written under the checkpoint's .pt name (issue 57)
    assert f"error: output {ckpt} ends in '.pt', but the export writes an ONNX model; expected a name ending in .onnx." in text
    assert ckpt.read_bytes() == before


def test_debug_shows_the_traceback(world, capsys):
    with pytest.raises(OSError):
        main(["--debug", "reparam", str(world["ckpt"]), f"{world['afile']}/r.pt"])


# ------------------------------------------------------------------------------------------ a full disk
class _DiskFills:
    """``os`` for y9core.files.atomic_write whose ``write`` writes ``room`` bytes, then fails with ENOSPC."""

    def __init__(self, room: int) -> None:
        self.room = room

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = os.write(fd, bytes(data[: self.room]))
        self.room -= n
        return n


@pytest.mark.parametrize(
    "command, template, target",
    [
        ("export", "export {ckpt} -o {out}/g.onnx --imgsz 64 --no-check --no-simplify --exist-ok", "g.onnx"),
        ("build-engine", "build-engine {onnx} -o {out}/g.engine --target sm89 --exist-ok", "g.engine"),
        ("benchmark", "benchmark {onnx} --iters 1 --warmup 0 --frame 64x64 --json {out}/b.json", "b.json"),
    ],
)
def test_a_full_disk_says_so_and_keeps_the_old_file(world, tmp_path, command, template, target, capsys,
                                                     monkeypatch):  # fmt: skip
    if command == "build-engine":
        pytest.importorskip("tensorrt_rtx")
    import y9core.files.atomic_write as aw

    out = tmp_path / "out"
    out.mkdir()
    old = out / target
    old.write_bytes(b"the previous output")
    monkeypatch.setattr(aw, "os", _DiskFills(room=1000))
    argv = template.format(out=out, **{k: str(v) for k, v in world.items()}).split()
    code, text = run_cli(argv, capsys, as_nobody=False)
    assert code == 2 and "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: the disk is full (no space left on device) while writing {old}; free some space "
                      "and run again."], text  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == [target]  # no temporary file left
    assert old.read_bytes() == b"the previous output"


def test_a_full_disk_during_training_says_so(world, tmp_path, capsys, monkeypatch):
    """results.csv cannot be written (ENOSPC after the first epoch): one sentence naming it, no temporary file."""
    real_write = os.write

    def write(fd, data):  # the disk fills when results.csv's temporary is written (steps.csv and checkpoints still go)
        if "results.csv" in os.path.basename(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    project = tmp_path / "runs"
    # plots=false: no labels picture or batch previews drawn in the background (no picture is checked here)
    argv = f"train --data {world['data']} {TRAIN} --project {project} --name full plots=false".split()
    code, text = run_cli(argv, capsys, as_nobody=False)
    assert code == 2 and "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    results = project / "full" / "results.csv"
    assert errors == [f"error: the disk is full (no space left on device) while writing {results}; free some "
                      "space and run again."], text  # fmt: skip
    assert not list(project.rglob("*.tmp"))
    assert (project / "full" / "weights" / "last.pt").is_file()  # the finished epoch is kept
