"""``expect_file(path, what)``: the one check every input that must be a FILE goes through, so that a missing path
says "does not exist" and a folder given where a file is expected says "is a folder" (never "does not exist")."""

from __future__ import annotations

import os
from pathlib import Path


def expect_file(path: str | os.PathLike, what: str, expected: str = "") -> Path:
    """``path`` when it is a file; else one sentence naming ``what`` ("model file", "checkpoint" ...), the path
    and, when given, what was ``expected`` (e.g. "a .pt checkpoint").

    Raises:
        FileNotFoundError: nothing at ``path``. IsADirectoryError: a folder at ``path``.
    """
    p = Path(path)
    wanted = f"; expected {expected}" if expected else ""
    if p.is_dir():
        raise IsADirectoryError(f"{what} {p} is a folder{wanted or '; expected a file'}.")
    if not p.exists():
        raise FileNotFoundError(f"{what} {p} does not exist{wanted}.")
    return p
