"""onnxsim simplification that never makes the graph bigger and says what it did."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class SimplifyResult:
    """``model`` is the simplified graph, or the input when simplification failed or did not help."""

    model: Any  # onnx.ModelProto
    nodes_before: int
    nodes_after: int
    simplified: bool
    note: str = ""


def count_nodes(model: Any) -> int:
    return len(model.graph.node)


@contextlib.contextmanager
def _quiet_native_output() -> Iterator[None]:
    """Silence what native code prints on file descriptors 1 and 2 (onnxsim's C++ core prints a WARNING
    line for every shape op it cannot fold, e.g. under a dynamic batch)."""
    with tempfile.TemporaryFile() as sink:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def simplify_onnx(model: Any) -> SimplifyResult:
    """Run onnxsim (constant folding, shape inference, dead-code removal); keep the original graph if onnxsim
    fails, its own check fails, or the result has more nodes."""
    before = count_nodes(model)
    try:
        import onnxsim
    except ImportError:
        return SimplifyResult(model, before, before, False, "onnxsim is not installed (pip install onnxsim)")
    try:
        with _quiet_native_output():
            simplified, ok = onnxsim.simplify(model)
    except Exception as exc:  # onnxsim raises RuntimeError/ValueError/onnx errors on exotic graphs
        return SimplifyResult(model, before, before, False, f"onnxsim failed ({type(exc).__name__}: {exc})")
    if not ok:
        return SimplifyResult(
            model, before, before, False, "onnxsim's own check of the simplified graph failed"
        )
    after = count_nodes(simplified)
    if after > before:
        return SimplifyResult(
            model, before, before, False, f"onnxsim gave {after} nodes (> {before}); kept the raw graph"
        )
    return SimplifyResult(simplified, before, after, True)
