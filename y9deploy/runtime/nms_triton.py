"""Exact greedy NMS scan in one Triton kernel: its cost does not grow with the suppression chains.

Imported only when needed (``runtime.gpu_postprocess`` imports it when torch has CUDA and triton imports;
tests import it on the CPU with ``TRITON_INTERPRET=1``, Triton's interpreter, which runs the same kernel on
CPU tensors).

Input: for each image, the boolean matrix ``over[i, j] = iou(box i, box j) > t`` of its boxes sorted by
descending score (only ``j > i`` is read: the lower triangle and the diagonal may hold anything), packed by
``pack_rows`` into int32 words (bit ``j % 32`` of word ``j // 32`` of row ``i``). One program per image walks
its ``n`` boxes in order with the "removed" bits of all boxes in registers (``W`` words): box ``i`` is kept
when its bit is clear and fewer than ``max_det`` boxes are kept, and then its row is OR-ed into "removed".
That is greedy NMS step for step: box ``i`` is suppressed exactly when a kept box before it overlaps it.
Per box: a few scalar operations; per KEPT box: one load of its row (``W`` words). Up to ``MAX_K`` boxes
(``W <= 128`` words); callers use another method above that.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import triton
import triton.language as tl

MAX_K = 4096  # most boxes per image: W = 128 int32 words of "removed" bits held in registers
_KERNELS: dict[bool, Any] = {}


@triton.jit
def _bit_or(a, b):
    return a | b


def _scan(words_ptr, n_ptr, keep_ptr, K, W, max_det, W_PAD: tl.constexpr):  # noqa: N803 - Triton style
    """One program per image. words (int32 [B, K, W]), n (int32 [B]) -> keep bits (int32 [B, W], zeroed
    by the caller): bit ``i % 32`` of word ``i // 32`` set when box ``i`` is kept.

    Only core builtins and ``_bit_or`` are used (no ``tl.zeros``/``tl.sum``/``tl.cdiv``, which are jitted
    helpers that Triton's interpreter cannot call unless TRITON_INTERPRET was set before triton's import).
    """
    img = tl.program_id(0).to(tl.int64)
    n = tl.load(n_ptr + img)
    lanes = tl.arange(0, W_PAD)
    base = words_ptr + img * K * W
    removed = tl.full([W_PAD], 0, tl.int32)
    kept = n * 0  # int32 scalars carried through the loops
    one = kept + 1  # an int32 1: ``one << 31`` wraps to the sign bit (a Python 1 << 31 does not fit int32)
    for w in range(0, (n + 31) // 32):
        cur = tl.reduce(tl.where(lanes == w, removed, 0), 0, _bit_or)  # removed bits of boxes 32w .. 32w+31
        word = n * 0
        for bit in range(0, 32):
            i = w * 32 + bit
            if (i < n) & (((cur >> bit) & 1) == 0) & (kept < max_det):
                row = base + i * W
                removed = removed | tl.load(row + lanes, mask=lanes < W, other=0)
                cur = cur | tl.load(row + w)
                word = word | (one << bit)
                kept = kept + 1
        tl.store(keep_ptr + img * W + w, word)


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    knobs = getattr(triton, "knobs", None)  # triton >= 3.4; older versions read the variable directly
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _kernel() -> Any:
    """The jitted kernel (Triton's interpreter when TRITON_INTERPRET=1 is set at the first call)."""
    interpret = interpreting()
    if interpret not in _KERNELS:
        # K, W and max_det change from call to call: no recompilation for their values (divisibility by 16...)
        _KERNELS[interpret] = triton.jit(_scan, do_not_specialize=["K", "W", "max_det"])
    return _KERNELS[interpret]


def pack_rows(over: Any) -> Any:
    """over (Tensor[B, K, K] bool) -> Tensor[B, K, W] int32, W = ceil(K / 32): bit ``j % 32`` of word
    ``j // 32`` of row ``i`` is ``over[i, j]`` (eight bits summed into a byte, four bytes read as one
    little-endian int32)."""
    import torch
    import torch.nn.functional as F

    if sys.byteorder != "little":  # pragma: no cover - every CUDA host is little-endian
        raise RuntimeError("nms_triton.pack_rows reads bytes as little-endian int32 words.")
    b, k, _ = over.shape
    w = -(-k // 32)
    u8 = over.view(torch.uint8)
    if w * 32 != k:
        u8 = F.pad(u8, (0, w * 32 - k))
    # made on the device (no host copy: this runs inside CUDA graph captures, runtime.graph_post)
    weights = torch.ones(8, dtype=torch.uint8, device=over.device) << torch.arange(
        8, dtype=torch.uint8, device=over.device
    )
    byte = (u8.view(b, k, w * 4, 8) * weights).sum(-1, dtype=torch.uint8)  # [B, K, 4W]
    return byte.view(torch.int32)  # [B, K, W]


def greedy_keep(over: Any, n: Any, max_det: int) -> Any:
    """Greedy NMS of each image's sorted boxes.

    Args:
        over (Tensor[B, K, K] bool): ``iou[i, j] > t`` of the boxes sorted by descending score (only
            ``j > i`` is read), K <= MAX_K.
        n (Tensor[B] int): boxes of each image (positions >= n are padding, never kept).
        max_det: most kept boxes per image.
    Returns:
        Tensor[B, K] bool: the kept boxes (at most ``max_det`` per image, the first ones by score).
    """
    import torch

    b, k, k2 = over.shape
    if k != k2 or k > MAX_K or over.dtype != torch.bool:
        raise ValueError(
            f"over has shape {tuple(over.shape)} and dtype {over.dtype}; expected [B, K, K] bool with K <= {MAX_K}."
        )
    words = pack_rows(over.contiguous())
    w = words.shape[2]
    bits = torch.zeros((b, w), dtype=torch.int32, device=over.device)
    if b:
        counts = n.to(device=over.device, dtype=torch.int32).clamp(0, k).contiguous()
        w_pad = max(16, triton.next_power_of_2(w))
        _kernel()[(b,)](
            words, counts, bits, k, w, int(max_det), W_PAD=w_pad, num_warps=1, enable_fp_fusion=False
        )
    shifts = torch.arange(32, dtype=torch.int32, device=over.device)
    return ((bits[:, :, None] >> shifts) & 1).bool().view(b, w * 32)[:, :k]
