"""One sentence for a YAML file that does not parse: the file, the line and column, and the parser's reason."""

from __future__ import annotations

import os


def yaml_error_at(path: str | os.PathLike, exc: Exception) -> str:
    """``"data.yaml:3:9 is not valid YAML: mapping values are not allowed here"`` for a PyYAML error ``exc`` raised
    while reading ``path`` (the line and column are 1-based; without a position the file alone is named)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    context = getattr(exc, "context", None)
    detail = f"{problem} ({context})" if context and context != problem else str(problem)
    return f"{where} is not valid YAML: {detail}"
