"""Exact greedy NMS scan in one Triton kernel: its cost does not grow with the suppression chains.

Imported only when needed (``post.torch_batched`` and ``post.graph`` import it when torch has CUDA and triton imports;
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
def bit_or(a, b):
    return a | b


def _scan(words_ptr, n_ptr, keep_ptr, K, W, max_det, W_PAD: tl.constexpr):  # noqa: N803 - Triton style
    """One program per image. words (int32 [B, K, W]), n (int32 [B]) -> keep bits (int32 [B, W], zeroed
    by the caller): bit ``i % 32`` of word ``i // 32`` set when box ``i`` is kept.

    Only core builtins and ``bit_or`` are used (no ``tl.zeros``/``tl.sum``/``tl.cdiv``, which are jitted
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
        cur = tl.reduce(tl.where(lanes == w, removed, 0), 0, bit_or)  # removed bits of boxes 32w .. 32w+31
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


def _iou_bits(boxes_ptr, n_ptr, t_ptr, words_ptr, K, W, BI: tl.constexpr):  # noqa: N803 - Triton style
    """Grid (B, ceil(K / BI), W). boxes (float32 [B, K, 4] xyxy, sorted by score), n (int32 [B]), t (float32
    [1]) -> words (int32 [B, K, W]): bit ``j % 32`` of word ``j // 32`` of row ``i`` is ``iou(i, j) > t`` for
    ``i < j < n``, else 0.

    A program computes one word (32 columns) of BI rows, with the float32 operations of ``y9core.boxes``
    (``box_iou``) in its order (``enable_fp_fusion=False``: no fused multiply-adds; ``div_rn``: IEEE
    division), so the bits equal the host's comparisons. Tiles the scan never reads are not written: rows >= n,
    words at or beyond n, and words wholly left of the tile's first row (the scan reads row i's bits only for
    j > i... and bits j < i of words it already passed cannot change its result: see ``_scan``).
    """
    img = tl.program_id(0).to(tl.int64)
    row0 = tl.program_id(1) * BI
    w = tl.program_id(2)
    n = tl.load(n_ptr + img)
    if (row0 < n) & (w * 32 < n) & (w * 32 + 31 >= row0):
        rows = row0 + tl.arange(0, BI)
        cols = w * 32 + tl.arange(0, 32)
        base = boxes_ptr + img * K * 4
        rmask = rows < K
        cmask = cols < K
        rx1 = tl.load(base + rows * 4, mask=rmask, other=0.0)
        ry1 = tl.load(base + rows * 4 + 1, mask=rmask, other=0.0)
        rx2 = tl.load(base + rows * 4 + 2, mask=rmask, other=0.0)
        ry2 = tl.load(base + rows * 4 + 3, mask=rmask, other=0.0)
        cx1 = tl.load(base + cols * 4, mask=cmask, other=0.0)
        cy1 = tl.load(base + cols * 4 + 1, mask=cmask, other=0.0)
        cx2 = tl.load(base + cols * 4 + 2, mask=cmask, other=0.0)
        cy2 = tl.load(base + cols * 4 + 3, mask=cmask, other=0.0)
        area_r = (rx2 - rx1) * (ry2 - ry1)
        area_c = (cx2 - cx1) * (cy2 - cy1)
        iw = tl.minimum(rx2[:, None], cx2[None, :]) - tl.maximum(rx1[:, None], cx1[None, :])
        iw = tl.maximum(iw, 0.0)
        ih = tl.minimum(ry2[:, None], cy2[None, :]) - tl.maximum(ry1[:, None], cy1[None, :])
        ih = tl.maximum(ih, 0.0)
        inter = iw * ih
        union = area_r[:, None] + area_c[None, :]
        union = union - inter
        iou = tl.math.div_rn(inter, union)
        hit = (iou > tl.load(t_ptr)) & (cols[None, :] > rows[:, None]) & (cols[None, :] < n)
        bit = tl.full([32], 1, tl.int32) << tl.arange(0, 32)  # 1 << 31 is the int32 sign bit
        word = tl.reduce(tl.where(hit, bit[None, :], 0), 1, bit_or)
        tl.store(words_ptr + (img * K + rows) * W + w, word, mask=rmask)


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    knobs = getattr(triton, "knobs", None)  # triton >= 3.4; older versions read the variable directly
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def kernel(name: str = "scan") -> Any:
    """The jitted kernel ``name`` ("scan" or "iou_bits"; Triton's interpreter when TRITON_INTERPRET=1 is set
    at its first call)."""
    key = (name, interpreting())
    if key not in _KERNELS:
        # K, W and max_det change from call to call: no recompilation for their values (divisibility by 16...)
        fn, fixed = (_scan, ["K", "W", "max_det"]) if name == "scan" else (_iou_bits, ["K", "W"])
        _KERNELS[key] = triton.jit(fn, do_not_specialize=fixed)
    return _KERNELS[key]


IOU_ROWS = 64  # rows of one iou_bits program


def iou_bits(boxes: Any, n: Any, t: Any, out: Any = None) -> Any:
    """Packed IoU > t bits of each image's sorted boxes, straight from the boxes (no [B, K, K] matrix).

    Args:
        boxes (Tensor[B, K, 4] float32): xyxy boxes sorted by descending score (K <= MAX_K).
        n (Tensor[B] int): boxes of each image (positions >= n are padding).
        t (Tensor[1] float32): the threshold (``boxes.threshold_below(iou)``).
        out: a Tensor[B, K, W] int32 to write into (tests fill it with junk first).
    Returns:
        Tensor[B, K, W] int32, W = ceil(K / 32): the ``pack_rows`` layout of ``iou[i, j] > t`` for
        ``i < j < n[b]``; words the scan never reads (see ``_iou_bits``) are left unwritten.
    """
    import torch

    b, k, four = boxes.shape
    if four != 4 or k > MAX_K or boxes.dtype != torch.float32:
        raise ValueError(
            f"boxes has shape {tuple(boxes.shape)} and dtype {boxes.dtype}; expected [B, K, 4] float32 with "
            f"K <= {MAX_K}."
        )
    w = -(-k // 32)
    words = torch.empty((b, k, w), dtype=torch.int32, device=boxes.device) if out is None else out
    if b:
        counts = n.to(device=boxes.device, dtype=torch.int32).clamp(0, k).contiguous()
        grid = (b, -(-k // IOU_ROWS), w)
        kernel("iou_bits")[grid](
            boxes.contiguous(), counts, t.to(torch.float32).contiguous(), words, k, w,
            BI=IOU_ROWS, num_warps=2, enable_fp_fusion=False,
        )  # fmt: skip
    return words


def scan_words(words: Any, n: Any, max_det: int) -> Any:
    """Greedy NMS from packed bits: words (Tensor[B, K, W] int32, the ``pack_rows`` layout), n (Tensor[B])
    -> keep Tensor[B, K] bool (at most ``max_det`` per image, the first ones by score)."""
    import torch

    b, k, w = words.shape
    bits = torch.zeros((b, w), dtype=torch.int32, device=words.device)
    if b:
        counts = n.to(device=words.device, dtype=torch.int32).clamp(0, k).contiguous()
        w_pad = max(16, triton.next_power_of_2(w))
        kernel()[(b,)](
            words, counts, bits, k, w, int(max_det), W_PAD=w_pad, num_warps=1, enable_fp_fusion=False
        )
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    return ((bits[:, :, None] >> shifts) & 1).bool().view(b, w * 32)[:, :k]


def pack_rows(over: Any) -> Any:
    """over (Tensor[B, K, K] bool) -> Tensor[B, K, W] int32, W = ceil(K / 32): bit ``j % 32`` of word
    ``j // 32`` of row ``i`` is ``over[i, j]`` (eight bits summed into a byte, four bytes read as one
    little-endian int32)."""
    import torch
    import torch.nn.functional as F

    if sys.byteorder != "little":  # pragma: no cover - every CUDA host is little-endian
        raise RuntimeError("triton_nms.pack_rows reads bytes as little-endian int32 words.")
    b, k, _ = over.shape
    w = -(-k // 32)
    u8 = over.view(torch.uint8)
    if w * 32 != k:
        u8 = F.pad(u8, (0, w * 32 - k))
    # made on the device (no host copy: this runs inside CUDA graph captures, post.graph)
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
    return scan_words(pack_rows(over.contiguous()), n, max_det)
