"""Reading the GPU libraries ahead (``y9train.library_prefetch``): which files, the bytes asked for, files that cannot
be opened left alone, the switch."""

from __future__ import annotations

import os

from y9train.library_prefetch import MIN_BYTES, gpu_library_files, prefetch, prefetch_wanted


def test_large_shared_libraries_are_found_largest_first_and_read_ahead(tmp_path, monkeypatch):
    lib, nv = tmp_path / "torch" / "lib", tmp_path / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    nv.mkdir(parents=True)
    sizes = {lib / "libtorch_cuda.so": 3 * MIN_BYTES, nv / "libcudnn_engines.so.9": 2 * MIN_BYTES,
             lib / "libsmall.so": MIN_BYTES - 1, nv / "notes.txt": 4 * MIN_BYTES}  # fmt: skip
    for path, size in sizes.items():
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: no disk used
    os.symlink(lib / "libtorch_cuda.so", lib / "libtorch_cuda.so.1")  # a link to a file already listed
    files = gpu_library_files([lib, tmp_path / "nvidia", tmp_path / "missing"])
    assert files == [(lib / "libtorch_cuda.so").resolve(), (nv / "libcudnn_engines.so.9").resolve()]
    gone = tmp_path / "gone.so"
    assert prefetch([*files, gone]) == 5 * MIN_BYTES  # a file that cannot be opened is skipped
    monkeypatch.setenv("Y9_PREFETCH_GPU_LIBS", "1")
    assert prefetch_wanted()
    monkeypatch.setenv("Y9_PREFETCH_GPU_LIBS", "0")
    assert not prefetch_wanted()
