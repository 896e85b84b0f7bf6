"""Reading each checkpoint once per test module, for tests whose subject is what comes after the reading.

The torch backend's ``load_deploy_model`` (unpickle, build the network, fuse: 1-3 s for the embedded model on the
2-core box) runs for every ``Detector`` made from a ``.pt`` file. Tests that make many Detectors of one file to
check something else (the Ultralytics-style snippets, the guides' commands run in-process) read it once: the first
call reads it for real, later calls of the same file (same resolved path, size and mtime: a file written meanwhile
is read again) get the same deployment model. Each caller still makes its own Detector and results. Reading
checkpoints itself is tested without this (tests/reliability, tests/deploy, tests/train).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def read_each_checkpoint_once(patch: pytest.MonkeyPatch) -> dict[tuple, Any]:
    """Patch the torch backend's ``load_deploy_model`` with one that remembers its results, for as long as
    ``patch`` holds (a ``pytest.MonkeyPatch.context()`` of a module fixture). Returns the memory (key: resolved
    path, size, mtime in ns, fuse) so a test can see what was read."""
    from y9deploy.runtime.backends import torch_backend

    read, memory = torch_backend.load_deploy_model, {}

    def read_once(source: Any, *, fuse: bool = True) -> Any:
        if not isinstance(source, (str, Path)):
            return read(source, fuse=fuse)
        path = Path(source).resolve()
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, fuse)
        if key not in memory:
            memory[key] = read(source, fuse=fuse)
        return memory[key]

    patch.setattr(torch_backend, "load_deploy_model", read_once)
    return memory
