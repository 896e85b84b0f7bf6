"""The training state of ``last.pt`` stored as one byte buffer: a few tensors instead of thousands.

A resumable checkpoint holds the raw weights and the optimiser's moments: one tensor per parameter, several per
parameter for Adam (3,366 for a gelan-t, 2,025 of them the optimiser's). ``torch.load(weights_only=True)`` spends
about 0.1 ms of pure Python on each tensor it rebuilds and ``torch.save`` a few tens of microseconds, so a run's
epoch-end write and its resume were dominated by the count, not the bytes. ``pack`` stores every tensor of a nested
structure (dicts, lists, tuples) in one uint8 tensor and three small index tensors; ``unpack`` rebuilds the
structure with a new tensor for each (same dtype, shape and values; never a view of the buffer). Both are plain
tensors and containers, so the packed form still loads with ``weights_only=True``. Each tensor keeps its memory
layout: a channels_last weight comes back channels_last (the optimiser's moments must match their parameters'
strides: a fused AdamW step over moments of another layout reads the wrong elements, and a resume diverges).

Packed form (``{"y9-packed": 1, ...}``):
- ``tree``: the structure with each tensor replaced by the marker string ``TENSOR`` (in order of appearance);
- ``dtypes``: uint8 [N], each tensor's dtype as an index into ``DTYPES``; ``ndims``: uint8 [N];
- ``dims``: int64 [sum(ndims)], the shapes one after another;
- ``orders``: int64 [sum(ndims)], each tensor's dimensions from the outermost in memory to the innermost (0, 1, ...
  for a C-contiguous tensor; 0, 2, 3, 1 for a channels_last one);
- ``blob``: uint8 [B], each tensor's bytes in that memory order from the previous one's end rounded up to
  ``ALIGN`` bytes, so every tensor starts on an 8-byte boundary (a view of its dtype can be taken there).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch

PACKED_KEY = "y9-packed"
TENSOR = "\x00y9-tensor"
ALIGN = 8
DTYPES = (
    torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8,
    torch.uint8, torch.bool, torch.complex64, torch.complex128,
)  # fmt: skip
_CODE = {d: i for i, d in enumerate(DTYPES)}


def is_packed(obj: Any) -> bool:
    """Whether ``obj`` is the packed form ``pack`` writes."""
    return isinstance(obj, dict) and obj.get(PACKED_KEY) == 1


def _map_leaves(obj: Any, leaf: Any) -> Any:
    """``obj`` rebuilt with ``leaf(value)`` for every value that is not a dict, list or tuple (in order)."""
    if isinstance(obj, Mapping):
        return _same_kind(obj, {k: _map_leaves(v, leaf) for k, v in obj.items()})
    if isinstance(obj, list):
        return [_map_leaves(v, leaf) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_map_leaves(v, leaf) for v in obj)
    return leaf(obj)


def _same_kind(original: Mapping, items: dict) -> dict:
    """``items`` as an ``OrderedDict`` when ``original`` is one (a state dict), with its ``_metadata`` (the modules'
    versions ``load_state_dict`` reads), else as a dict."""
    if not isinstance(original, OrderedDict):
        return items
    out = OrderedDict(items)
    if hasattr(original, "_metadata"):
        out._metadata = original._metadata  # type: ignore[attr-defined]
    return out


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def pack(obj: Any) -> dict[str, Any]:
    """``obj`` (nested dicts / lists / tuples of tensors and plain values) with every tensor's bytes copied into
    one CPU buffer (a copy: later changes to the tensors do not reach it)."""
    tensors: list[torch.Tensor] = []

    def leaf(o: Any) -> Any:
        if not isinstance(o, torch.Tensor):
            return o
        if o.dtype not in _CODE:
            raise TypeError(f"cannot pack a tensor of dtype {o.dtype}; expected one of {[str(d) for d in DTYPES]}")
        tensors.append(o.detach())
        return TENSOR

    tree = _map_leaves(obj, leaf)
    parts: list[torch.Tensor] = []
    dims: list[int] = []
    orders: list[int] = []
    for t in tensors:
        order = memory_order(t)
        flat = t.permute(order).contiguous().reshape(-1).view(torch.uint8).cpu()
        parts.append(flat)
        if flat.numel() % ALIGN:
            parts.append(torch.zeros(ALIGN - flat.numel() % ALIGN, dtype=torch.uint8))
        dims.extend(t.shape)
        orders.extend(order)
    return {
        PACKED_KEY: 1,
        "tree": tree,
        "dtypes": torch.tensor([_CODE[t.dtype] for t in tensors], dtype=torch.uint8),
        "ndims": torch.tensor([t.dim() for t in tensors], dtype=torch.uint8),
        "dims": torch.tensor(dims, dtype=torch.int64),
        "orders": torch.tensor(orders, dtype=torch.int64),
        "blob": torch.cat(parts) if parts else torch.zeros(0, dtype=torch.uint8),
    }


def memory_order(t: torch.Tensor) -> list[int]:
    """``t``'s dimensions from the largest stride to the smallest (ties in dimension order): ``t.permute(order)`` is
    C-contiguous when ``t`` is dense (any permutation of a contiguous layout, channels_last included)."""
    return sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))


def _index_tensor(packed: Mapping[str, Any], key: str, dtype: torch.dtype) -> list[int]:
    value = packed.get(key)
    if not isinstance(value, torch.Tensor) or value.dtype != dtype or value.dim() != 1:
        shown = "missing" if value is None else f"{type(value).__name__} {getattr(value, 'dtype', '')}".strip()
        raise ValueError(f"its '{key}' is {shown}; expected a 1-D {str(dtype).removeprefix('torch.')} tensor")
    return value.tolist()


def unpack(packed: Mapping[str, Any]) -> Any:
    """The structure ``pack`` stored, each tensor a new CPU tensor. ``ValueError`` (one sentence, without the
    file's name) when the packed form is malformed: index tensors of the wrong type or length, an unknown dtype,
    a negative size, a buffer of another length than its tensors need, more or fewer markers than tensors."""
    codes = _index_tensor(packed, "dtypes", torch.uint8)
    ndims = _index_tensor(packed, "ndims", torch.uint8)
    dims = _index_tensor(packed, "dims", torch.int64)
    orders = _index_tensor(packed, "orders", torch.int64)
    blob = packed.get("blob")
    if not isinstance(blob, torch.Tensor) or blob.dtype != torch.uint8 or blob.dim() != 1:
        raise ValueError("its 'blob' is not a 1-D uint8 tensor")
    if len(codes) != len(ndims) or len(dims) != sum(ndims) or len(orders) != len(dims):
        raise ValueError(
            f"its index describes {len(codes)} dtypes, {len(ndims)} ranks, {len(dims)} sizes and {len(orders)} "
            "memory orders; expected one dtype and one rank per tensor and as many sizes and orders as the ranks add up to"
        )
    if any(c >= len(DTYPES) for c in codes) or any(d < 0 for d in dims):
        raise ValueError(f"its index holds a dtype code over {len(DTYPES) - 1} or a negative size")
    tensors: list[torch.Tensor] = []
    offset = j = 0
    for code, nd in zip(codes, ndims):
        dtype, shape, order = DTYPES[code], dims[j : j + nd], orders[j : j + nd]
        j += nd
        if sorted(order) != list(range(nd)):
            raise ValueError(f"its memory order {order} of a {nd}-dimensional tensor is not a permutation of 0..{nd - 1}")
        numel = 1
        for d in shape:
            numel *= d
        nbytes = numel * dtype.itemsize
        if offset + nbytes > blob.numel():
            raise ValueError(f"its buffer holds {blob.numel()} bytes, fewer than its tensors need")
        stored = blob[offset : offset + nbytes].view(dtype).reshape([shape[d] for d in order])
        back = sorted(range(nd), key=order.__getitem__)  # the inverse permutation
        tensors.append(stored.permute(back).clone())  # a dense layout: clone keeps its strides
        offset += _aligned(nbytes)
    if offset != blob.numel():
        raise ValueError(f"its buffer holds {blob.numel()} bytes; its tensors need {offset}")
    it = iter(tensors)
    markers = 0

    def leaf(o: Any) -> Any:
        nonlocal markers
        if not (isinstance(o, str) and o == TENSOR):
            return o
        markers += 1
        return next(it, None)

    tree = _map_leaves(packed.get("tree"), leaf)
    if markers != len(tensors):
        raise ValueError(f"its structure has {markers} tensor places for {len(tensors)} stored tensors")
    return tree
