"""The compute capability of this machine's NVIDIA GPU, through the CUDA driver library (ctypes).

No torch, no TensorRT and no cuda-python needed: a deployment box or a CI machine without a GPU gets None.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache

_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def _load_driver() -> ctypes.CDLL | None:
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    found = ctypes.util.find_library("cuda")
    if found:
        names.append(found)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@lru_cache(maxsize=8)
def current_compute_capability(device: int = 0) -> str | None:
    """``"sm89"`` for an RTX 4090, ``"sm90"`` for an H100/H200; None when there is no usable NVIDIA GPU
    (no driver, no device, or ``device`` out of range)."""
    lib = _load_driver()
    if lib is None:
        return None
    try:
        if lib.cuInit(0) != 0:
            return None
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or not 0 <= device < count.value:
            return None
        handle = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(handle), device) != 0:
            return None
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if lib.cuDeviceGetAttribute(
            ctypes.byref(major), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle
        ):
            return None
        if lib.cuDeviceGetAttribute(
            ctypes.byref(minor), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle
        ):
            return None
    except (AttributeError, OSError):
        return None
    return f"sm{major.value}{minor.value}"
