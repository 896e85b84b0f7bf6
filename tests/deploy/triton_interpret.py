"""Triton's CPU interpreter (TRITON_INTERPRET=1) for the NMS kernel tests, with one fast path added.

The interpreter reduces with numpy for its own combine functions (``tl.sum``, ``tl.max`` ...) but calls any other
one, here ``triton_nms.bit_or``, once per element, in Python: ~0.4 s per ``tl.reduce`` of a 64 x 32 tile, ~90% of
the Triton tests' time. ``interpret_fast(monkeypatch)`` sets TRITON_INTERPRET=1 and reduces with
``bit_or`` by ``np.bitwise_or.reduce`` (the same function: OR of the int32 words along the axis);
``test_nms_triton.test_fast_or_reduce_equals_the_interpreters`` checks it against the interpreter's own loop. The
kernels themselves run unchanged, every other operation by the interpreter.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def bitwise_or_reduce(ops: Any, inputs: tuple) -> Any:
    """The fast path for a ``ReduceOps`` whose combine function is ``bit_or`` over one input along an axis
    (``None``: not handled, the caller falls back to the interpreter)."""
    if len(inputs) != 1 or ops.axis is None:
        return None
    data = inputs[0].handle.data
    out = np.bitwise_or.reduce(data, axis=ops.axis, keepdims=ops.keep_dims).astype(data.dtype)
    return ops.to_tensor(out, inputs[0].dtype)


def interpret_fast(monkeypatch: Any) -> None:
    """TRITON_INTERPRET=1 for the test, and ``bit_or`` reductions by numpy (module docstring)."""
    from triton.runtime import interpreter

    from y9core.post import triton_nms

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert triton_nms.interpreting()
    slow = interpreter.ReduceOps.apply_impl

    def apply_impl(self: Any, inputs: Any) -> Any:
        if getattr(self.combine_fn, "fn", self.combine_fn) is getattr(triton_nms.bit_or, "fn", triton_nms.bit_or):
            out = bitwise_or_reduce(self, inputs)
            if out is not None:
                return out
        return slow(self, inputs)

    monkeypatch.setattr(interpreter.ReduceOps, "apply_impl", apply_impl)
