"""Where a command writes, decided in one place: nothing is written over an input or over earlier results.

Every writing command of ``y9`` (predict, inspect, val, train, export, build-engine, reparam, triton, convert)
goes through this module:

- ``next_run_dir("runs", "predict")``: a NEW numbered run folder, ``runs/predict``, ``runs/predict2``,
  ``runs/predict3`` ... (the convention of the YOLO family's tools), taken atomically: each candidate is created with
  ``mkdir`` (no ``exist_ok``), so two processes started at once never get the same folder.
- ``resolve_output_dir(explicit, task=..., exist_ok=...)``: the run folder of a command. ``None`` gives a new
  numbered folder; an explicit folder that already holds results is refused in one sentence unless ``exist_ok``.
  With ``exist_ok`` the returned ``RunDir`` lists what the folder held (``earlier``), and the command says in one
  line what it does with it: result logs (predictions.jsonl / .csv, audit logs) are appended to and new images get
  new names; a training run's checkpoints and results.csv are replaced (``RunDir.reuse_note``). An output folder
  equal to an input, or inside an input folder, is refused (``inputs``).
- ``check_output_file(path, inputs=..., exist_ok=...)``: the same rule for commands that write one FILE (or one
  model folder: a Triton repository entry): refused when it is one of the inputs (resolved paths and
  ``os.path.samefile``, so links and hard links count), when it is a folder where a file is expected, and when it
  exists already unless ``exist_ok`` (the ``--exist-ok`` option of every command).
- ``RunLock(folder)``: one writer per folder. The lock is ``fcntl.flock`` on ``<folder>/.y9.lock``, which holds the
  holder's pid, host, start time and command line. flock is released by the kernel when the holder exits in any
  way (kill -9 included), so a crashed run never blocks the next one and no pid-liveness guess decides who
  writes; a lock file left by a dead holder is taken over with a warning naming it. A second writer is refused in
  one sentence naming the holder. On file systems without flock (some network mounts) the lock falls back to
  ``O_CREAT | O_EXCL`` with a liveness check of the recorded pid on this host.

Every refusal is an ``OutputError`` (a ``ValueError``): one sentence naming the path, what is there and what was
expected.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from y9core.errors import OutputError
from y9core.files.own_file import foreign_lock, open_own

LOCK_NAME = ".y9.lock"
EXIST_OK_FLAG = "--exist-ok"
_SHOWN = 4  # earlier files named in a message (the rest counted)
log = logging.getLogger("y9")


def next_run_dir(project: str | os.PathLike = "runs", name: str = "predict") -> Path:
    """A new, empty folder ``project/name``, or ``project/name2``, ``name3`` ... (the first free one).

    Created atomically: two processes asking at once get two different folders.
    Raises:
        OSError naming the folder when it cannot be created (read-only disk, a file in the way).
    """
    root = Path(project)
    root.mkdir(parents=True, exist_ok=True)
    k = 1
    while True:
        path = root / (name if k == 1 else f"{name}{k}")
        try:
            path.mkdir()
        except FileExistsError:
            k += 1
            continue
        return path


def earlier_files(folder: str | os.PathLike) -> list[str]:
    """What ``folder`` already holds (relative paths of files, sorted; the lock file not counted); [] when it
    does not exist."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != LOCK_NAME
    )


def _listing(files: list[str]) -> str:
    shown = ", ".join(files[:_SHOWN])
    more = f" and {len(files) - _SHOWN} more" if len(files) > _SHOWN else ""
    return f"{len(files)} file{'s' if len(files) != 1 else ''}: {shown}{more}"


@dataclass(frozen=True)
class RunDir:
    """A command's output folder: ``path``; ``numbered``: a new folder from ``next_run_dir``; ``earlier``: the files
    an explicit folder held before this run (only with ``exist_ok``; relative paths); ``created``: this run created
    the folder (a command that fails before writing anything removes it again)."""

    path: Path
    numbered: bool = False
    earlier: tuple[str, ...] = ()
    created: bool = False
    parents_made: tuple[Path, ...] = ()  # the parent folders this run created for it (runs/ on a first run)

    def remove_if_unused(self) -> bool:
        """Remove the folder this run created, and the parents it created for it, while they hold nothing (the lock
        file aside): a command that failed before writing leaves nothing behind. Returns whether it was removed."""
        if not self.created or not self.path.is_dir() or any(p.name != LOCK_NAME for p in self.path.iterdir()):
            return False
        (self.path / LOCK_NAME).unlink(missing_ok=True)
        self.path.rmdir()
        for parent in self.parents_made:  # deepest first
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
        return True

    def reuse_note(self, action: str) -> str | None:
        """The one line a command prints when it writes into a folder holding earlier results (None: it did not),
        ``action`` saying what happens to them, e.g. "predictions.jsonl and .csv are appended to"."""
        if not self.earlier:
            return None
        return f"{self.path} holds {_listing(list(self.earlier))} of an earlier run; {action}."


def _refuse_inputs(out: Path, inputs: Iterable[str | os.PathLike], what: str) -> None:
    """One sentence when ``out`` is one of ``inputs`` or inside an input folder."""
    target = out.resolve()
    for given in inputs:
        src = Path(given)
        real = src.resolve()
        if target == real or (target.exists() and real.exists() and os.path.samefile(target, real)):
            raise OutputError(
                f"{what} {out} is the input {given}; writing there would overwrite it. Expected another path."
            )
        if real.is_dir() and real in target.parents:
            raise OutputError(
                f"{what} {out} is inside the input folder {given}; outputs there would mix with the inputs (and be "
                f"read as inputs next time). Expected a folder outside {given}."
            )


def resolve_output_dir(
    explicit: str | os.PathLike | None,
    *,
    task: str,
    exist_ok: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    project: str | os.PathLike = "runs",
    option: str = "--name",
) -> RunDir:
    """The folder a command writes its results into (created; see the module docstring).

    Args:
        explicit: the folder the user named (None: a new numbered folder ``project/task[N]``).
        task: the command ("predict", "val" ...): the numbered folder's name.
        exist_ok: write into an explicit folder that already holds results (what it held is in ``earlier``).
        inputs: files and folders the command reads; the output may be none of them nor inside one.
        project: the parent of numbered folders.
        option: how the user named the folder, for the message (e.g. "--name", "--save-dir").
    Raises:
        OutputError: the folder holds results (without ``exist_ok``), is a file, is an input or inside one.
    """
    inputs = list(inputs)
    if explicit is None:
        made = _missing_folders(Path(project))
        path = next_run_dir(project, task)
        try:
            _refuse_inputs(path, inputs, "output folder")
        except OutputError:
            path.rmdir()
            raise
        return RunDir(path, numbered=True, created=True, parents_made=made)
    path = Path(explicit)
    earlier = check_output_dir(path, exist_ok=exist_ok, inputs=inputs, option=option)
    created = not path.exists()
    made = _missing_folders(path.parent)
    path.mkdir(parents=True, exist_ok=True)
    return RunDir(path, numbered=False, earlier=tuple(earlier), created=created, parents_made=made)


def _missing_folders(folder: Path) -> tuple[Path, ...]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists() or p == Path(p.anchor) or str(p) in ("", "."):
            break
        missing.append(p)
    return tuple(missing)


def check_output_dir(
    path: str | os.PathLike, *, exist_ok: bool = False, inputs: Iterable[str | os.PathLike] = (), option: str = "--name"
) -> list[str]:
    """``resolve_output_dir``'s checks of a folder the user named, with nothing created (a command that sets up
    for a while checks first): the files it already holds (allowed with ``exist_ok``).

    Raises:
        OutputError: as ``resolve_output_dir``.
    """
    path = Path(path)
    _refuse_inputs(path, list(inputs), "output folder")
    if path.exists() and not path.is_dir():
        raise OutputError(f"output folder {path} ({option}) is a file; expected a folder (new or empty).")
    earlier = earlier_files(path)
    if earlier and not exist_ok:
        raise OutputError(
            f"output folder {path} ({option}) already holds {_listing(earlier)} of an earlier run; expected a new or "
            f"empty folder: leave {option} out for a new numbered folder, choose another, or add {EXIST_OK_FLAG} to "
            "write into it (nothing there is replaced silently)."
        )
    return earlier


def check_output_file(
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    exist_ok: bool = False,
    what: str = "output",
    folder: bool = False,
) -> Path:
    """Refuse writing ``path`` (one output file, or with ``folder`` one output folder such as a Triton model entry)
    over an input, over a folder, or over an existing file unless ``exist_ok``. Returns ``path``.

    Raises:
        OutputError: one sentence naming ``path`` and what is there.
    """
    out = Path(path)
    _refuse_inputs(out, inputs, what)
    if not folder and out.is_dir():
        raise OutputError(f"{what} {out} is a folder; expected a file name.")
    if folder and out.exists() and not out.is_dir():
        raise OutputError(f"{what} {out} is a file; expected a folder.")
    if out.exists() and not exist_ok:
        kind = "folder" if out.is_dir() else "file"
        raise OutputError(
            f"{what} {out} already exists (a {kind} of an earlier run); expected a new name: choose another, or add "
            f"{EXIST_OK_FLAG} to replace it."
        )
    return out


def _holder_text() -> str:
    command = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv))[:200]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    return f"pid {os.getpid()} on {socket.gethostname()} since {stamp} ({command})\n"


def pid_alive(pid: int) -> bool:
    """A process of this pid exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _recorded(text: str) -> tuple[int | None, str | None]:
    """(pid, host) a lock file records, (None, None) when unreadable."""
    parts = text.split()
    if len(parts) >= 4 and parts[0] == "pid" and parts[1].isdigit() and parts[2] == "on":
        return int(parts[1]), parts[3]
    return None, None


class RunLock:
    """One writer per folder (module docstring). ``with RunLock(folder):`` or ``acquire()`` / ``release()``.

    Raises (from ``acquire``):
        OutputError: another process holds the folder; the sentence names it (pid, host, start, command).
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        warn: Callable[[str], None] | None = None,
        lock_file: str | os.PathLike | None = None,
        subject: str | None = None,
    ) -> None:
        """``lock_file``/``subject``: lock one output file instead of the folder (``y9core.files.output_file``): the lock
        file beside it and the words that name it in the refusal."""
        self.folder = Path(folder)
        self.path = Path(lock_file) if lock_file is not None else self.folder / LOCK_NAME
        self.subject = subject
        self.warn = warn or log.warning
        self.taken_over: str | None = None  # what a dead holder's lock file said, when one was taken over
        self._fd: int | None = None
        self._flock = True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _refuse(self, holder: str) -> OutputError:
        who = holder.strip() if _recorded(holder)[0] is not None else "a process that left no details"
        if self.subject is not None:
            return OutputError(
                f"{self.subject} is being written by another y9 process ({who}); expected one writer per file: wait "
                "for it to finish, or choose another name."
            )
        return OutputError(
            f"{self.folder} is being written by another y9 process ({who}); expected one writer per folder: wait for "
            "it to finish, or write somewhere else."
        )

    def acquire(self) -> RunLock:
        if self._fd is not None:
            return self
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT)  # a planted link or file: refused, not followed
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 4096, 0).decode("utf-8", "replace")
                os.close(fd)
                raise self._refuse(holder) from None
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    return self._acquire_exclusive()
                raise
            try:  # the file may have been removed by a holder that released it meanwhile: lock the current one
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        if previous and _recorded(previous)[0] is None:  # not a lock y9 wrote: neither quoted nor replaced
            os.close(fd)
            raise foreign_lock(self.path)
        self._fd = fd
        self._write_holder(fd)
        if previous:
            self._took_over(previous)
        return self

    def _took_over(self, previous: str) -> None:
        self.taken_over = previous
        kept = f"; files it wrote in {self.folder} are kept" if self.subject is None else ""
        self.warn(f"took over {self.path}: it was left by a run that ended without releasing it ({previous}){kept}.")

    def _write_holder(self, fd: int) -> None:
        data = _holder_text().encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    def _acquire_exclusive(self) -> RunLock:
        """Fallback without flock: create the lock file exclusively; a file left by a pid that is gone on this host
        is taken over, one held by a live pid (or on another host) refuses."""
        self._flock = False
        for _ in range(3):
            try:
                fd = open_own(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                try:
                    fd = open_own(self.path, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                previous = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
                os.close(fd)
                pid, host = _recorded(previous)
                if previous and pid is None:
                    raise foreign_lock(self.path) from None
                if pid is None or host != socket.gethostname() or pid_alive(pid):
                    raise self._refuse(previous) from None
                self.path.unlink(missing_ok=True)
                self._took_over(previous)
                continue
            self._fd = fd
            self._write_holder(fd)
            return self
        raise self._refuse("")

    def release(self) -> None:
        """Remove the lock file and let go (safe to call twice)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    self.path.unlink()
            except FileNotFoundError:
                pass
        finally:
            if self._flock:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
