"""Fetch one file over HTTP(S) into an open file, bounded in time and size (``official_weights`` uses it).

    fetch(url, fd, deadline_s=DEADLINE_S, max_bytes=MAX_BYTES, progress=report)   # -> bytes written

- a total deadline (``DEADLINE_S``; ``$Y9_WEIGHTS_DEADLINE_S`` sets another), checked between reads; each read
  waits at most ``READ_TIMEOUT_S``, and reads return what has arrived (``read1``), so a server that drips a byte at
  a time meets the deadline like any other;
- a size cap (``MAX_BYTES``, well above the largest official file; ``$Y9_WEIGHTS_MAX_MB`` sets another): a
  ``Content-Length`` above it is refused before the body is read, and a body that grows past it (an endless one) is
  cut off there;
- the length received is compared with ``Content-Length`` when the server sent one;
- a failure of the network is a ``FetchError`` (the caller says "offline ..."); a failure to WRITE the file (a
  full disk, a read-only folder, a file-size limit) is the ``OSError`` itself, so that it is reported as what it is.
"""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Callable
from http.client import HTTPException

from y9core.errors import Y9Error

DEADLINE_S = 1800.0  # 30 minutes for the whole file
READ_TIMEOUT_S = 30.0
MAX_BYTES = 1 << 30  # 1 GiB
CHUNK = 1 << 20
DEADLINE_ENV, MAX_MB_ENV = "Y9_WEIGHTS_DEADLINE_S", "Y9_WEIGHTS_MAX_MB"  # a slow link, a mirror of bigger files


def _setting(env: str, default: float) -> float:
    """A positive number from the environment variable ``env``, else ``default``; one sentence when malformed."""
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"{env}={text!r} is not a positive number; expected e.g. {env}={default:g}.")
    return value


class _WriteFailed(Exception):
    def __init__(self, error: OSError) -> None:
        self.error = error


class FetchError(Y9Error):
    """The server could not be reached, answered an error, was too slow, or sent too much or too little (the caller
    turns it into its own sentence: ``official_weights.WeightsDownloadError``)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fetch(
    url: str,
    fd: int,
    *,
    deadline_s: float | None = None,
    max_bytes: int | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    digest: Callable[[bytes], object] | None = None,
) -> int:
    """Write the body of ``url`` to ``fd`` (module docstring); the number of bytes written.

    Raises:
        FetchError: a network failure, the deadline passed, the size cap or the Content-Length not respected.
        OSError: writing ``fd`` failed.
    """
    deadline_s = _setting(DEADLINE_ENV, DEADLINE_S) if deadline_s is None else deadline_s
    max_bytes = int(_setting(MAX_MB_ENV, MAX_BYTES / 2**20) * 2**20) if max_bytes is None else max_bytes
    start = time.monotonic()
    done = 0
    try:
        with urllib.request.urlopen(url, timeout=min(READ_TIMEOUT_S, deadline_s)) as answer:  # noqa: S310
            total = int(answer.headers.get("Content-Length") or 0) or None
            if total is not None and total > max_bytes:
                raise FetchError(f"the server announces {total} bytes, more than the {max_bytes} bytes y9 accepts")
            while True:
                if time.monotonic() - start > deadline_s:
                    raise FetchError(f"{done} bytes arrived in the {deadline_s:g} s allowed for the whole file")
                chunk = answer.read1(CHUNK)
                if not chunk:
                    break
                if done + len(chunk) > max_bytes:
                    raise FetchError(f"the body goes on past {max_bytes} bytes, the most y9 accepts")
                try:
                    _write_all(fd, chunk)
                except OSError as exc:  # the disk's, not the network's: raised as it is
                    raise _WriteFailed(exc) from None
                if digest is not None:
                    digest(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
    except _WriteFailed as failed:
        raise failed.error from None
    except FetchError:
        raise
    except (OSError, HTTPException, ValueError) as exc:  # URLError, timeouts, resets, IncompleteRead ...
        raise FetchError(str(getattr(exc, "reason", None) or exc) or type(exc).__name__) from None
    if total is not None and done != total:
        raise FetchError(f"the body stopped at {done} of the {total} bytes its Content-Length announced")
    return done

