"""Where ``Result.save()`` writes: never over its source, never over a file y9 did not write itself.

- ``Result.save()`` without a name writes ``<stem>.jpg`` into the run folder: the one ``predict(save=True)`` wrote
  (``Result.save_dir``), else the run folder of the ``predict`` call that made the result (``RunFolder``: made on the
  first save, as ``y9 predict`` makes it: ``runs/predict``, ``runs/predict2`` ...). When that name is taken by a
  file this process did not write, the next free name is used (``<stem>_1.jpg`` ...), as ``y9 predict`` names the
  annotated copies in a reused folder.
- Any path, given or default, that is the source image itself (resolved paths, links and hard links) is refused in
  one sentence (``OutputError``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from y9core.errors import OutputError

_LOCK = threading.Lock()
_WRITTEN: set[Path] = set()  # resolved paths this process wrote through Result.save


class RunFolder:
    """The run folder of one ``predict`` / ``track`` call, made on first need (``y9core.files.run_dir``: a new numbered
    ``project/predict[N]``); shared by the call's results, so that they all go to one folder."""

    def __init__(self, project: str | os.PathLike = "runs", task: str = "predict") -> None:
        self.project = Path(project)
        self.task = task
        self._path: Path | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        with self._lock:
            if self._path is None:
                from y9core.files.run_dir import resolve_output_dir

                self._path = resolve_output_dir(None, task=self.task, project=self.project).path
            return self._path


def refuse_source(path: Path, source: str) -> None:
    """One sentence when ``path`` is the file ``source`` names (the image the result was read from)."""
    src = Path(source)
    if not src.is_file():
        return
    same = path.resolve() == src.resolve() or (path.exists() and os.path.samefile(path, src))
    if same:
        raise OutputError(f"Result.save({str(path)!r}) would write over the source image {source}; expected "
                          "another file name (or save() without one: the run folder).")  # fmt: skip


def default_target(folder: Path, stem: str, source: str) -> Path:
    """``folder/<stem>.jpg``, or the next free ``<stem>_<k>.jpg`` when that name holds a file this process did not
    write (nor the source)."""
    candidate, k = folder / f"{stem}.jpg", 1
    with _LOCK:
        while candidate.exists() and candidate.resolve() not in _WRITTEN or _is_source(candidate, source):
            candidate = folder / f"{stem}_{k}.jpg"
            k += 1
    return candidate


def _is_source(path: Path, source: str) -> bool:
    try:
        refuse_source(path, source)
    except OutputError:
        return True
    return False


def remember(path: Path) -> None:
    """``path`` was written by this process (a later ``save()`` of the same result may write it again)."""
    with _LOCK:
        _WRITTEN.add(path.resolve())
