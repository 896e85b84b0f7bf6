"""The GPU libraries read into the page cache ahead of their first use, while the run's setup goes on.

torch maps its CUDA libraries (libtorch_cuda, cuDNN's engine libraries, cuBLAS; several GB) at import or first use,
but the kernel reads their pages only when a kernel's code is first touched: on a machine whose page cache is cold (a
fresh machine), the first forward, backward and cuDNN autotuning fault the pages in a few at a time, in random order.
``start_prefetch`` asks the kernel to read each whole file ahead (``posix_fadvise(WILLNEED)``: sequential readahead,
no copy into this process) from a daemon thread, during the data and model set-up.

Experiment (issue 48): on only where ``Y9_PREFETCH_GPU_LIBS=1`` (``prefetch_wanted``) until a fresh-machine
measurement decides.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

#: the shared libraries worth reading ahead: torch's own and NVIDIA's wheels' (cuDNN, cuBLAS, ...), above this size
MIN_BYTES = 8 << 20


def prefetch_wanted() -> bool:
    """Whether this process reads the GPU libraries ahead (``Y9_PREFETCH_GPU_LIBS=1``)."""
    return os.environ.get("Y9_PREFETCH_GPU_LIBS", "0").strip() == "1"


def gpu_library_files(roots: list[Path] | None = None) -> list[Path]:
    """The shared libraries of at least ``MIN_BYTES`` under torch's ``lib`` folder and the ``nvidia`` packages beside
    torch (or under ``roots``), largest first."""
    if roots is None:
        import torch

        lib = Path(torch.__file__).resolve().parent / "lib"
        roots = [lib, lib.parent.parent / "nvidia"]
    files = {p.resolve() for root in roots if root.is_dir() for p in root.rglob("*.so*") if p.is_file()}
    sized = [(p.stat().st_size, p) for p in files]
    return [p for size, p in sorted(sized, reverse=True) if size >= MIN_BYTES]


def prefetch(files: list[Path]) -> int:
    """Ask the kernel to read ``files`` into the page cache; returns the bytes asked for (files that cannot be opened
    are left alone)."""
    total = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            total += os.fstat(fd).st_size
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


def start_prefetch(files: list[Path] | None = None) -> threading.Thread:
    """``prefetch`` in a daemon thread (it never holds the process's exit); returns the started thread."""
    thread = threading.Thread(
        target=lambda: prefetch(gpu_library_files() if files is None else files), name="y9-prefetch", daemon=True
    )
    thread.start()
    return thread
