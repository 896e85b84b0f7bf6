"""The official YOLOv9 weights by name: ``y9.Model("yolov9-c.pt")``, ``y9 predict img.jpg -m gelan-c.pt``.

    path = weights_path("yolov9-c.pt")   # a file of that name here, else the cached download (made once)

A model argument that names no existing file but one of ``OFFICIAL`` (the files of the official repository's
release) is downloaded once into the cache folder (``cache_dir()``: ``$Y9_WEIGHTS_DIR``, else
``$XDG_CACHE_HOME/y9/weights``, else ``~/.cache/y9/weights``) and used from there afterwards:

- from ``RELEASE_URL`` + name (``$Y9_WEIGHTS_URL`` replaces the base: a mirror, or a local server in tests);
- written to a temporary file in the cache folder and renamed into place only when whole and checked, so an
  interrupted download never leaves a file that looks finished;
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
import tempfile
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from y9core.errors import Y9Error, Y9Notice

RELEASE_URL = "https://github.com/WongKinYiu/yolov9/releases/download/v0.1/"
URL_ENV, DIR_ENV = "Y9_WEIGHTS_URL", "Y9_WEIGHTS_DIR"
TIMEOUT_S = 30.0
CHUNK = 1 << 20


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


def weights_path(source: str | os.PathLike, *, progress: Callable[[int, int | None], None] | None = None) -> Path:
    """``source`` itself when it is a file (or not an official name), else the cached official file, downloaded on
    first use (module docstring). ``progress(done_bytes, total_bytes or None)`` is called as it downloads (default:
    a progress bar on stderr).

    Raises:
        WeightsDownloadError: the download failed (one sentence naming the URL and where to put the file) or its
            sha256 is not the pinned one.
    """
    if not is_official_name(source):
        return Path(source)
    entry = OFFICIAL[str(source)]
    target = cache_dir() / entry.name
    if target.is_file():
        return target
    return download(entry, target, progress=progress)


def download(entry: OfficialWeights, target: Path, *, progress: Callable[[int, int | None], None] | None = None) -> Path:
    """Fetch ``entry`` into ``target`` atomically, checked against its pinned digest."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WeightsDownloadError(f"cannot make the weights folder {target.parent} ({exc}); expected a writable "
                                   f"folder, or set {DIR_ENV}.") from None  # fmt: skip
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    report = progress or _stderr_bar(entry.name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(entry.url, timeout=TIMEOUT_S) as answer:  # noqa: S310 - http(s) only
                    total = int(answer.headers.get("Content-Length") or 0) or None
                    done = 0
                    while chunk := answer.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        report(done, total)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise WeightsDownloadError(
                    f"cannot download {entry.name} from {entry.url} ({reason}); offline, download it elsewhere and "
                    f"put it at {target} (or pass the file's path instead of its name)."
                ) from None
            if total is not None and done != total:
                raise WeightsDownloadError(f"the download of {entry.url} stopped at {done} of {total} bytes; expected "
                                           "the whole file (try again).")  # fmt: skip
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if entry.sha256 is not None and got != entry.sha256:
            raise WeightsDownloadError(f"{entry.url} has sha256 {got}, not the pinned {entry.sha256}; refused (a "
                                       "changed or corrupted file, or a wrong mirror).")  # fmt: skip
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
