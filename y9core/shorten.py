"""Text quoted from a user's file in an error message, cut to a readable length: a 100 MB one-line label file must
not print a 100 MB error."""

from __future__ import annotations

MAX_QUOTED = 120  # characters of quoted text in one error sentence


def shorten(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` when it has at most ``limit`` characters; else its start, an ellipsis and its length."""
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 30, 10)]}... ({len(text):,} characters)"


def quoted(value: object, limit: int = MAX_QUOTED) -> str:
    """``repr(value)``, cut to about ``limit`` characters without building the whole repr of a huge value."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[: max(limit - 30, 10)]!r}... ({len(value):,} characters)"
    if isinstance(value, (list, tuple, dict)) and len(value) > 10:
        head = list(value.items() if isinstance(value, dict) else value)[:10]
        return f"{shorten(repr(head)[:-1], limit)}, ...] ({len(value):,} items)"
    return shorten(repr(value), limit)
