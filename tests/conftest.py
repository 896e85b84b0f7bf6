"""Shared test helpers.

Tests that need ../shared (datasets, official fixtures) call ``shared_path(...)``:
- Y9_SHARED unset (a user's fresh clone): the test is skipped;
- Y9_SHARED set (CI sets ../shared) and the file missing: the test FAILS, it never skips.
"""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "tests" / "data"


def shared_path(*parts: str) -> Path:
    root = os.environ.get("Y9_SHARED")
    if not root:
        pytest.skip("Y9_SHARED is not set: this test needs ../shared (datasets, official fixtures)")
    base = Path(root)
    if not base.is_absolute():
        base = (REPO / base).resolve()
    path = base.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing although Y9_SHARED={root} is set")
    return path


def pytest_collection_modifyitems(config, items):
    """The tests marked ``slow`` run first (otherwise in collection order): with ``-n 2 --dist worksteal``, a
    40-second test collected last would run alone on one worker at the end while the other waits."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True, scope="session")
def _cache_dir_outside_shared(tmp_path_factory):
    """Dataset caches (labels, images) go to a temporary folder, never beside ../shared's data."""
    if "Y9_CACHE_DIR" in os.environ:
        yield
        return
    os.environ["Y9_CACHE_DIR"] = str(tmp_path_factory.mktemp("y9cache"))
    yield
    os.environ.pop("Y9_CACHE_DIR", None)


def _run_folder(tmp_path_factory, name: str) -> Path:
    """A folder shared by this test run's workers (the parent of each worker's base folder under pytest-xdist)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder ``made`` under ``name`` in this test run's shared folder, filled by ``make(folder)`` once per run:
    the first worker to ask makes it under a file lock, the others wait for it and share it. A failed ``make``
    leaves nothing marked made (the next caller makes it again)."""
    root = _run_folder(tmp_path_factory, name)
    folder = root / "made"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "made.ok").is_file():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            make(folder)
            (root / "made.ok").touch()
    return folder


@pytest.fixture
def shared():
    """``shared("fixtures", "official", "official_nms.npz") -> Path`` (skip/fail rules above)."""
    return shared_path


def y9_output(*args) -> subprocess.CompletedProcess:
    """``y9 ARGS`` through the console entry point in this process (no interpreter and torch start per call): its
    exit status and what it printed, as ``subprocess.run(..., capture_output=True, text=True)`` returns them."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_y9(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def python_output(argv: list[str], cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``python -c CODE [ARGS]`` (argv ``["-c", ARGS..., CODE]``) or ``python SCRIPT ARGS`` (argv ``[SCRIPT, ARGS...]``)
    as ``__main__`` in this process, in ``cwd`` when given (no interpreter and torch start per call): its exit status
    (0, a SystemExit's code, or 1 with the traceback on stderr) and what it printed, as ``subprocess.run`` returns them.
    The test's argv, sys.path and folder are put back after it."""
    import runpy
    import traceback
    from contextlib import chdir, nullcontext

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_path = sys.argv, list(sys.path)
    code = 0
    with chdir(cwd) if cwd is not None else nullcontext(), redirect_stdout(out), redirect_stderr(err):
        try:
            if argv[0] == "-c":
                sys.argv, sys.path[:0] = argv[:-1], [""]
                exec(compile(argv[-1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
            else:
                sys.argv, sys.path[:0] = [str(a) for a in argv], [str(Path(argv[0]).resolve().parent)]
                runpy.run_path(str(argv[0]), run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, exit 1
            traceback.print_exc()
            code = 1
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def run_y9(args: list[str]) -> int:
    """``y9 ARGS`` in this process through the console entry point (``y9cli.app.main``); its exit status."""
    from y9cli.app import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0
