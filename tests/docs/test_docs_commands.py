"""Every shell command of README.md and docs/*.md runs and exits 0.

The commands of one guide run in order, in one temporary folder (a later command uses the files of an earlier
one, as a reader following the guide would), with the venv's ``y9`` first on PATH and this checkout's packages on
PYTHONPATH. A plain ``y9 ARGS`` runs through the console entry point in the test's process (``in_process_args``:
the interpreter and torch start once, not per command; the entry point's own process is tested in tests/cli), and so
does a plain ``python -c CODE`` or ``python SCRIPT ARGS`` (``in_process_python``: as ``__main__``, with its argv);
pipes, lists, globs, ``python ...`` and the like run in bash. Big inputs are replaced by small ones and a few
options shrunk, by the tables of ``tests/docs/doc_inputs.py`` (each row with its reason); blocks that cannot run
on a CPU-only machine carry a ``<!-- y9-docs: skip (reason) -->`` marker (``tests/docs/doc_blocks.py``), and are
listed and counted by ``test_skips_are_few_and_explained``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from contextlib import chdir
from pathlib import Path

import pytest

from tests.conftest import REPO, python_output, y9_output
from tests.docs.doc_blocks import DocBlock, guide_files, parse_markdown, unlabelled_command_blocks
from tests.docs.doc_inputs import SKIP_COMMANDS, Prepared, StandIns, prepare

GUIDES = guide_files(REPO)
# Reasons a whole block may be skipped for (keep skips rare: everything else runs here).
ALLOWED_SKIP_REASONS = ("needs a GPU", "needs docker", "needs a camera", "network", "runs another test")
MAX_SKIPPED_BLOCKS = 4
COMMAND_TIMEOUT_S = 240


def _shell_words(command: str) -> list[str] | None:
    """``command`` split as a POSIX shell splits it, shell operators as words of their own; None when unbalanced."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def in_process_args(command: str) -> list[str] | None:
    """The arguments of a plain ``y9 ARGS`` command, run through the console entry point in this process (no
    interpreter and torch start per command); ``None`` for anything a shell must run: pipes, lists, redirections,
    variables, globs, ``~``, other programs."""
    words = _shell_words(command)
    if not words or words[0] != "y9":
        return None
    if any(set(w) & set("|&;<>()$`*?[]{}~") for w in words):
        return None
    return words[1:]


def in_process_python(command: str) -> list[str] | None:
    """The ``sys.argv`` of a plain ``python -c CODE [ARGS]`` (``["-c", ARGS...]``, CODE last) or ``python SCRIPT
    ARGS`` (``[SCRIPT, ARGS...]``), run in this process as ``__main__`` (``python_output``); ``None`` for anything a
    shell must run (the rules of ``in_process_args``) and for ``python -m`` or other interpreter options."""
    words = _shell_words(command)
    if words is None or len(words) < 2 or words[0] not in {"python", "python3"}:
        return None
    code = words[2] if words[1] == "-c" and len(words) > 2 else None
    plain = words[1:2] + words[3:] if code is not None else words[1:]
    if any(set(w) & set("|&;<>()$`*?[]{}~") for w in plain):
        return None  # a shell operator outside quotes, or a variable, glob, ~ in an argument
    if code is not None:
        return ["-c", *words[3:], code]
    return None if words[1].startswith("-") else words[1:]


def _run(text: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``text`` as the guide's reader runs it: ``y9 ARGS`` (``in_process_args``) and plain ``python`` commands
    (``in_process_python``) in this process with the same working folder and environment (the test's own folder and
    environment are put back after it, whatever the command changed), anything else through ``bash -e -o pipefail
    -c``."""
    args, argv = in_process_args(text), in_process_python(text)
    if args is None and argv is None:
        return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT_S)  # fmt: skip
    saved = dict(os.environ)
    try:
        with chdir(cwd):
            os.environ.clear()
            os.environ.update(env)
            return y9_output(*args) if args is not None else python_output(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _blocks(path: Path) -> list[DocBlock]:
    return parse_markdown(path, REPO)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")  # a shared 2-core box: one thread per process is fastest
    env["COLUMNS"] = "120"
    env.pop("Y9_DEBUG", None)
    return env


@pytest.fixture(scope="session")
def stand_ins(tmp_path_factory) -> StandIns:
    return StandIns(REPO, tmp_path_factory.mktemp("docs-stand-ins"))


def test_every_guide_has_shell_commands_found():
    """The extraction itself: the guides this test is about are found, with their commands."""
    found = {p.relative_to(REPO).as_posix(): _blocks(p) for p in GUIDES}
    assert {"README.md", "docs/getting-started.md", "docs/deploy.md", "docs/drone.md"} <= set(found)
    commands = [c.text for blocks in found.values() for b in blocks for c in b.commands]
    assert any(c.startswith("y9 build-engine gelan-c.onnx") for c in commands)
    assert any(c.startswith("y9 predict") and "--tile" in c for c in commands)
    assert len(commands) >= 30


def test_no_y9_command_hides_in_an_unlabelled_block():
    """A plain ``` block is not run: a guide's `y9 ...` commands must sit in ```bash blocks."""
    hidden = [where for p in GUIDES for where in unlabelled_command_blocks(p, REPO)]
    assert not hidden, f"label these blocks ```bash (or ```text for output): {hidden}"


def test_setup_commands_are_not_run():
    """README's `make demo` / `make test` set up venvs: never run here, and said so with a reason."""
    assert isinstance(prepare("make demo   # creates .venv"), str)
    assert isinstance(prepare("make test"), str)
    readme = [c.text for b in _blocks(REPO / "README.md") for c in b.commands]
    assert any(c.startswith("make demo") for c in readme) and any(c.startswith("make test") for c in readme)
    assert set(SKIP_COMMANDS) >= {"make demo", "make test"}


def test_skips_are_few_and_explained(capsys):
    skipped = [b for p in GUIDES for b in _blocks(p) if b.skip]
    with capsys.disabled():
        for b in skipped:
            print(f"\nskipped block {b.file}:{b.line} ({b.skip}): " + "; ".join(c.text for c in b.commands))
    for b in skipped:
        assert any(b.skip.startswith(r) for r in ALLOWED_SKIP_REASONS), (b.file, b.line, b.skip)
    assert len(skipped) <= MAX_SKIPPED_BLOCKS, [f"{b.file}:{b.line}" for b in skipped]


def test_substitutions_keep_the_command():
    """The rewrites change sizes and pin the CPU, and nothing else of the command."""
    p = prepare("y9 export gelan-c.pt -o gelan-c.onnx --imgsz 640 # static-shape ONNX")
    assert isinstance(p, Prepared)
    assert p.text == "y9 export gelan-c.pt -o gelan-c.onnx --imgsz 64" and p.inputs == ["gelan-c.pt"]
    p = prepare("y9 build-engine model.onnx -o model.engine --fp16 --batch 1:4:16")
    assert p.text == "y9 build-engine model.onnx -o model.engine --fp16 --batch 1:4:16 --target sm89"
    p = prepare("y9 predict rtsp://cam.local/stream -m model.engine --save-dir out")
    assert p.text.startswith("y9 predict stream.mp4 -m model.onnx --save-dir out") and "--max-frames 4" in p.text
    assert p.inputs == ["stream.mp4", "model.onnx"]
    assert in_process_args("y9 predict source=photos/ model=model.onnx --name 'a b'") == [
        "predict", "source=photos/", "model=model.onnx", "--name", "a b"]
    for shell_only in ("y9 info m.onnx | head", "y9 val a && y9 val b", "y9 predict 'photos/*.jpg'",
                       "y9 export m.pt > log", "python -c 'import y9'", "Y9_DEBUG=1 y9 info m.onnx", "y9 x $HOME"):
        assert in_process_args(shell_only) is None, shell_only
    assert in_process_python("python -c 'import y9; print(1)'") == ["-c", "import y9; print(1)"]
    assert in_process_python("python3 /r/samples/drone_video.py a.onnx --out o/t.mp4") == [
        "/r/samples/drone_video.py", "a.onnx", "--out", "o/t.mp4"]
    for shell_only in ("python -m y9cli info m.onnx", "python -c 'import y9' | head", "python s.py *.jpg",
                       "y9 info m.onnx", "pythonx s.py", "python -O s.py"):
        assert in_process_python(shell_only) is None, shell_only
    p = prepare("y9 reparam yolov9-c.pt gelan-c.pt")
    assert p.inputs == ["yolov9-c.pt"] and p.changes == []


@pytest.mark.slow
@pytest.mark.parametrize("guide", GUIDES, ids=[p.relative_to(REPO).as_posix() for p in GUIDES])
def test_guide_commands_exit_0(guide: Path, tmp_path: Path, stand_ins: StandIns, capsys):
    env = _env()
    log: list[str] = []
    ran = 0
    for block in _blocks(guide):
        if block.skip:
            log.append(f"{block.file}:{block.line}: block skipped ({block.skip})")
            continue
        for command in block.commands:
            prepared = prepare(command.text)
            if isinstance(prepared, str):
                log.append(f"{command.where()}: not run ({prepared}): {command.text}")
                continue
            notes = [n for n in (stand_ins.make(tmp_path, p) for p in prepared.inputs) if n]
            t0 = time.perf_counter()
            result = _run(prepared.text, tmp_path, env)
            seconds = time.perf_counter() - t0
            ran += 1
            log.append(f"{command.where()}: {seconds:.1f} s, exit {result.returncode}: {prepared.text}")
            log.extend(f"    changed: {c}" for c in prepared.changes)
            log.extend(f"    stand-in: {n}" for n in notes)
            assert result.returncode == 0, (
                f"{command.where()}: `{command.text}` (run as `{prepared.text}` in {tmp_path}) exited "
                f"{result.returncode}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
            )
    with capsys.disabled():
        print("\n" + "\n".join(log))
    if not ran:
        pytest.skip(f"{guide.name} has no shell command that runs here")
