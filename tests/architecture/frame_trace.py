"""The way a frame takes through y9's code: which modules it crosses and how often it comes back to one it left.

``trace_modules(fn) -> Trace`` runs ``fn()`` under ``sys.setprofile`` and records, at every Python call and
return, the y9 module whose code runs next (the innermost frame of a module of ``PACKAGES``; code of other packages,
numpy or onnxruntime, counts as the y9 module that called it). Consecutive events in one module are one visit, so
``Trace.path`` is the list of visits: ``len(set(path))`` modules crossed, and every visit after a module's first is
a return to a module the frame had left (``Trace.returns``). A call into a helper module and back thus counts one
return: the fewer modules a frame has to go through, and the fewer times it goes back and forth among them, the
shorter its way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tests.architecture.import_graph import PACKAGES


def _y9_module(frame: FrameType | None) -> str | None:
    """The module of the innermost frame (from ``frame`` outwards) whose code belongs to one of ``PACKAGES``."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] in PACKAGES:
            return name
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class Trace:
    path: tuple[str, ...]  # one entry per visit (consecutive events in one module are one visit)
    result: Any

    @property
    def modules(self) -> list[str]:
        """The modules crossed, in the order first entered."""
        return list(dict.fromkeys(self.path))

    @property
    def returns(self) -> int:
        """Visits to a module the frame had already left."""
        return len(self.path) - len(self.modules)

    def report(self) -> str:
        return (f"{len(self.modules)} modules, {self.returns} returns to a module left before:\n  "
                + "\n  ".join(self.modules) + "\nway: " + " > ".join(self.path))  # fmt: skip


def trace_modules(fn: Callable[[], Any]) -> Trace:
    """Run ``fn()`` and record the y9 modules its code passes through (this thread)."""
    path: list[str] = []
    here = __name__

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = _y9_module(frame)
        elif event == "return":
            module = _y9_module(frame.f_back)
        else:  # c_call / c_return / c_exception: C code runs inside the current Python frame
            return
        if module is None or module == here:
            return
        if not path or path[-1] != module:
            path.append(module)

    sys.setprofile(profile)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return Trace(tuple(path), result)
