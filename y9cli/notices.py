"""How the ``y9`` CLI prints y9's notices (``y9core.errors.Y9Notice``, e.g. ``FactsWarning``: a setting that differs
from the model's facts): one ``warning: <sentence>`` line on stderr, once, instead of Python's ``file:line:
Category`` form. Other warnings keep Python's own display."""

from __future__ import annotations

import warnings
from typing import Any

import typer

_seen: set[str] = set()


def install() -> None:
    """Route y9's notices through :func:`show` (idempotent)."""
    if getattr(warnings.showwarning, "__name__", "") == "show":
        return
    original = warnings.showwarning

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        from y9core.errors import Y9Notice

        if not issubclass(category, Y9Notice):
            original(message, category, filename, lineno, file, line)
            return
        text = str(message)
        if text not in _seen:
            _seen.add(text)
            typer.secho(f"warning: {text}", fg=typer.colors.YELLOW, err=True)

    warnings.showwarning = show
