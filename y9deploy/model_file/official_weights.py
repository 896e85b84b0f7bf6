"""The official YOLOv9 weights by name: ``y9.Model("yolov9-c.pt")``, ``y9 predict img.jpg -m gelan-c.pt``.

    path = weights_path("yolov9-c.pt")   # a file of that name here, else the cached download (made once)

A model argument that names no existing file but one of ``OFFICIAL`` (the files of the official repository's
release) is downloaded once into the cache folder (``cache_dir()``: ``$Y9_WEIGHTS_DIR``, else
``$XDG_CACHE_HOME/y9/weights``, else ``~/.cache/y9/weights``) and used from there afterwards:

- from ``RELEASE_URL`` + name (``$Y9_WEIGHTS_URL`` replaces the base: a mirror, or a local server in tests);
- fetched by ``download.fetch``: a total deadline (30 min) and a size cap (1 GiB, well above the largest official
  file), the length checked against Content-Length; written to ``.<name>.<pid>.part`` in the cache folder (created
  new, never through a link) and renamed into place only when whole, checked and loaded by the caller's ``verify``
  (the restricted loader), so an interrupted or wrong download never leaves a file that looks finished; the
  ``.part`` files of processes that are gone are removed by the next download;
- a cached file that is not a torch checkpoint (an HTML page, random bytes, cut short) is moved aside with a
  sentence naming it, so the next run downloads again;
- checked against the sha256 pinned here for the file; a file whose digest differs is refused (and removed). Where
  no digest is pinned yet (``sha256=None``: the digests of the release files could not be read from a trustworthy
  source when this table was written) the download is accepted with a warning that names its digest;
- loaded afterwards like any official checkpoint, by the restricted unpickler (``y9train.checkpoint``): nothing in
  the file is executed whatever its digest.

Offline (or when the server cannot be reached), one sentence names the URL and where to put the file by hand.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from y9core.errors import Y9Error, Y9Notice
from y9core.files.append_file import named
from y9core.files.own_file import open_own
from y9deploy.model_file.download import CHUNK, DEADLINE_S, FetchError, fetch

RELEASE_URL = "https://github.com/WongKinYiu/yolov9/releases/download/v0.1/"
URL_ENV, DIR_ENV = "Y9_WEIGHTS_URL", "Y9_WEIGHTS_DIR"


class WeightsDownloadError(Y9Error, OSError):
    """Official weights could not be downloaded, or the download is not the pinned file."""


class UnpinnedWeightsWarning(Y9Notice):
    """A download was accepted without a pinned digest to check it against (its own digest is named)."""


@dataclass(frozen=True)
class OfficialWeights:
    """One file of the official release: its ``name`` and pinned ``sha256`` (None: not pinned yet)."""

    name: str
    sha256: str | None = None

    def __post_init__(self) -> None:
        if self.sha256 is not None and (len(self.sha256) != 64 or set(self.sha256) - set("0123456789abcdef")):
            raise ValueError(f"{self.name}: sha256 {self.sha256!r} is not 64 lower-case hex digits.")

    @property
    def url(self) -> str:
        base = os.environ.get(URL_ENV) or RELEASE_URL
        return base.rstrip("/") + "/" + self.name


#: the release files, by name. The digests are not pinned: the release files could not be fetched from the
#: machines this was written on, and no trustworthy record of their sha256 was found (see the module docstring).
OFFICIAL = {w.name: w for w in (
    OfficialWeights("yolov9-t-converted.pt"), OfficialWeights("yolov9-s-converted.pt"),
    OfficialWeights("yolov9-m-converted.pt"), OfficialWeights("yolov9-c-converted.pt"),
    OfficialWeights("yolov9-e-converted.pt"), OfficialWeights("yolov9-c.pt"), OfficialWeights("yolov9-e.pt"),
    OfficialWeights("gelan-c.pt"), OfficialWeights("gelan-e.pt"),
)}  # fmt: skip


def cache_dir() -> Path:
    """Where downloaded weights are kept (module docstring)."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "y9" / "weights"


def is_official_name(source: object) -> bool:
    """``source`` is a bare name of ``OFFICIAL`` (no folder) that is not a file here."""
    text = str(source)
    return text in OFFICIAL and Path(text).name == text and not Path(text).exists()


def weights_path(
    source: str | os.PathLike,
    *,
    progress: Callable[[int, int | None], None] | None = None,
    verify: Callable[[Path], object] | None = None,
) -> Path:
    """``source`` itself when it is a file (or not an official name), else the cached official file, downloaded on
    first use (module docstring). ``progress(done_bytes, total_bytes or None)`` is called as it downloads (default:
    a progress bar on stderr); ``verify(path)`` loads a finished download (the restricted loader) before it is
    published into the cache: whatever it raises refuses the download.

    Raises:
        WeightsDownloadError: the download failed (one sentence naming the URL and where to put the file), its
            sha256 is not the pinned one, it does not load, or the cached file is damaged (it is moved aside).
        OSError: the cache folder cannot be written (a full disk, a read-only folder), as it is.
    """
    if not is_official_name(source):
        return Path(source)
    entry = OFFICIAL[str(source)]
    target = cache_dir() / entry.name
    if target.is_file() or target.is_symlink():
        _check_cached(target, entry)
        return target
    return download(entry, target, progress=progress, verify=verify)


def _check_cached(target: Path, entry: OfficialWeights) -> None:
    """A cached file that is not a torch zip checkpoint (an HTML page, random bytes, cut short: its zip directory is
    at the end) is moved aside, and says so."""
    reason = checkpoint_shape(target)
    if reason is None:
        return
    aside = target.with_name(f"{target.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    os.replace(target, aside)
    raise WeightsDownloadError(
        f"the cached download {target} of {entry.url} is not a checkpoint ({reason}); it was moved aside to "
        f"{aside.name} in that folder: run again to download it again, or put the file there by hand."
    )


def checkpoint_shape(path: Path) -> str | None:
    """None when ``path`` looks like a torch checkpoint (a zip with a ``data.pkl`` record), else why not."""
    import zipfile

    try:
        if path.is_symlink() or not path.is_file():
            return "not a plain file"
        with zipfile.ZipFile(path) as z:
            if not any(n.endswith("/data.pkl") or n == "data.pkl" for n in z.namelist()):
                return "a zip file without the data.pkl record of a torch checkpoint"
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        return f"not a torch zip file: {exc}"
    return None


def _clear_stale_parts(folder: Path, name: str) -> None:
    """Remove the ``.part`` files of downloads whose process is gone, or older than the download deadline."""
    for part in folder.glob(f".{name}.*.part"):
        pid = part.name[len(name) + 2 : -len(".part")]
        try:
            stale = time.time() - part.lstat().st_mtime > DEADLINE_S + 60
        except FileNotFoundError:
            continue
        if stale or not pid.isdigit() or not _alive(int(pid)):
            part.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    from y9core.files.run_dir import pid_alive

    return pid == os.getpid() or pid_alive(pid)


def download(
    entry: OfficialWeights,
    target: Path,
    *,
    progress: Callable[[int, int | None], None] | None = None,
    verify: Callable[[Path], object] | None = None,
) -> Path:
    """Fetch ``entry`` into ``target`` atomically: bounded (``download.fetch``), checked against its pinned digest
    and loaded by ``verify`` before it is renamed into place."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WeightsDownloadError(f"cannot make the weights folder {target.parent} ({exc}); expected a writable "
                                   f"folder, or set {DIR_ENV}.") from None  # fmt: skip
    _clear_stale_parts(target.parent, entry.name)
    digest = hashlib.sha256()
    tmp = target.with_name(f".{entry.name}.{os.getpid()}.part")
    tmp.unlink(missing_ok=True)  # this pid's own, left by an earlier try in this process
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, what="partial download")
    by_hand = f"download it elsewhere and put it at {target} (or pass the file's path instead of its name)"
    try:
        try:
            fetch(entry.url, fd, progress=progress or _stderr_bar(entry.name), digest=digest.update)
            os.fsync(fd)
        except FetchError as exc:
            raise WeightsDownloadError(f"cannot download {entry.name} from {entry.url} ({exc}); offline or a "
                                       f"failing server: {by_hand}.") from None  # fmt: skip
        except OSError as exc:  # writing failed (a full disk, a file-size limit): said as such, naming the file
            raise named(exc, tmp) from None
        finally:
            os.close(fd)
        got = digest.hexdigest()
        if entry.sha256 is not None and got != entry.sha256:
            raise WeightsDownloadError(f"{entry.url} has sha256 {got}, not the pinned {entry.sha256}; refused (a "
                                       "changed or corrupted file, or a wrong mirror).")  # fmt: skip
        reason = checkpoint_shape(tmp)
        if reason is None and verify is not None:
            try:
                verify(tmp)
            except (ValueError, OSError, RuntimeError) as exc:  # ModelFileError, UnsafePickleError ...
                reason = f"it does not load: {str(exc).replace(str(tmp), 'the file')}"
        if reason is not None:
            raise WeightsDownloadError(f"the download of {entry.url} is not a checkpoint ({reason}); it was not "
                                       f"kept: try again later, or {by_hand}.")  # fmt: skip
        if entry.sha256 is None:
            warnings.warn(f"{entry.name}: no sha256 is pinned for this file in y9; the download's is {got} (it is "
                          "loaded by the restricted unpickler all the same).", UnpinnedWeightsWarning,
                          stacklevel=2)  # fmt: skip
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _stderr_bar(name: str) -> Callable[[int, int | None], None]:
    """A one-line progress report on stderr (redrawn in place on a terminal, every 10% otherwise)."""
    shown = {"step": -1}
    tty = sys.stderr.isatty()

    def report(done: int, total: int | None) -> None:
        step = int(10 * done / total) if total else done // (50 * CHUNK)
        if not tty and step == shown["step"]:
            return
        shown["step"] = step
        size = f"{done / 1e6:.1f}" + (f"/{total / 1e6:.1f}" if total else "")
        line = f"downloading {name}: {size} MB" + (f" ({100 * done // total}%)" if total else "")
        sys.stderr.write(("\r" + line) if tty else line + "\n")
        if tty and total and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report
