"""A cache file: named numpy arrays in an ``.npz`` (no pickles) with a signature of what they were made from.

``read_npz_cache`` returns the arrays when the file exists and its signature matches, and None otherwise, so that
the caller rebuilds: a missing or stale file silently, a damaged one (cut short, a flipped bit caught by the zip
CRC-32, a member missing or unreadable) with a warning naming the file and the damage, never an exception.
``write_npz_cache`` writes a temporary file beside the target and renames it over the target; a failure is a
warning (the run goes on without the cache) and leaves no temporary file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

log = logging.getLogger("y9train.data")
T = TypeVar("T")


def read_npz_cache(
    path: Path | None, signature: str, build: Callable[[Any], T], *, what: str = "cache"
) -> T | None:
    """``build(arrays)`` of the cache at ``path`` (``arrays[name]`` reads one array; an error raised by ``build``
    counts as damage too), or None: absent, stale or damaged, to be rebuilt; ``what`` names the cache in the
    warning ("label cache")."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["signature"]) != signature:
                return None
            return build(z)
    except Exception as exc:  # a cache must never stop a run: whatever the damage, rebuild it
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        log.warning(
            "the %s %s is damaged (%s%s); rebuilding it",
            what, path, type(exc).__name__, f": {reason}" if reason else "",
        )  # fmt: skip
        return None


def write_npz_cache(
    path: Path, signature: str, arrays: dict[str, np.ndarray], *, what: str = "cache"
) -> bool:
    """Write the cache atomically; False (with a warning) when it cannot be written."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, signature=np.array(signature), **arrays)
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.warning("could not write the %s %s (%s); continuing without it", what, path, exc)
        with contextlib.suppress(OSError):  # e.g. the cache folder is under a file: there is no tmp to remove
            tmp.unlink(missing_ok=True)
        return False
