"""Bounds on the numbers of a model configuration file, checked before anything is built (``config.validate``).

A hand-written ``.yaml`` given to ``y9 train --model`` is data: each number is checked against a sane range (channels,
depth, kernel, stride, upsampling scale, ``from`` indices, head strides) and its type, and the whole network's size is
estimated from the channel widths, so that ``out: 2000000`` or ``depth: 10000000`` is one sentence naming the file,
the layer and the value, not gigabytes of allocation or a torch traceback. The ranges are several times those of the
largest official model (yolov9-e: 1024 channels, depth 2, kernels of 3, stride 2).
"""

from __future__ import annotations

from typing import Any

MAX_CHANNELS = 8192
MAX_DEPTH = 16
MAX_KERNEL = 11
MAX_STRIDE = 8
MAX_SCALE = 8
MAX_LAYERS = 1024
MAX_HEAD_STRIDE = 256
MAX_PARAMS = 500_000_000  # about 2 GB of float32 weights, several times the estimate of yolov9-e

#: key -> (low, high) for a single integer
RANGES: dict[str, tuple[int, int]] = {
    "out": (1, MAX_CHANNELS), "mid": (1, MAX_CHANNELS), "branch": (1, MAX_CHANNELS), "depth": (1, MAX_DEPTH),
    "k": (1, MAX_KERNEL), "s": (1, MAX_STRIDE), "scale": (1, MAX_SCALE),
}  # fmt: skip


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any, single_ok: bool = True) -> list[Any] | None:
    """``value`` as a list of its items when it is an int (``single_ok``) or a non-empty list of ints, else None."""
    items = [value] if single_ok and not isinstance(value, list) else value
    if not isinstance(items, list) or not items or not all(_is_int(v) for v in items):
        return None
    return items


def check_layer(layer: dict[str, Any], i: int, n: int, origin: str, error: type[Exception]) -> None:
    """The numbers of layer ``i`` of ``n`` (module docstring); ``error(sentence)`` is raised."""
    op = layer["op"]

    def refuse(key: str, expected: str) -> Exception:
        return error(f"{origin}: layer {i} ({op}) has {key}: {_shown(layer[key])}; expected {expected}")

    for key, (low, high) in RANGES.items():
        if key in layer and not (_is_int(layer[key]) and low <= layer[key] <= high):
            raise refuse(key, f"an integer from {low} to {high}")
    for key in ("from", "aux", "main"):
        if key in layer:
            items = _ints(layer[key], single_ok=key == "from")
            if items is None or not all(-n <= v < n for v in items):
                raise refuse(key, f"a layer index or a list of them (from {-n} to {n - 1}; negative counts back)")
    for key in ("outs", "pick"):
        if key in layer:
            items = _ints(layer[key], single_ok=False)
            high = MAX_CHANNELS if key == "outs" else 64
            if items is None or not all((1 if key == "outs" else 0) <= v <= high for v in items):
                raise refuse(key, f"a non-empty list of integers from {1 if key == 'outs' else 0} to {high}")


def check_strides(strides: Any, origin: str, error: type[Exception]) -> None:
    items = _ints(strides, single_ok=False)
    if items is None or not all(1 <= s <= MAX_HEAD_STRIDE for s in items) or items != sorted(set(items)):
        raise error(f"{origin}: strides is {_shown(strides)}; expected increasing integers from 1 to {MAX_HEAD_STRIDE}, "
                    "one per detection level (e.g. [8, 16, 32])")  # fmt: skip


def _params(op: str, layer: dict[str, Any], c1: int, out: int) -> int:
    """About the parameters of one layer (the blocks' convolutions, in the shape ``y9train.models.blocks`` builds)."""
    mid, b, depth = layer.get("mid", 0), layer.get("branch", 0), layer.get("depth", 1)
    if op == "conv":
        return c1 * out * layer["k"] ** 2
    if op in ("aconv", "adown"):
        return 9 * c1 * out
    if op == "sppelan":
        return c1 * mid + 4 * mid * out
    if op in ("elan1", "repncspelan"):
        per_branch = 2 * max(mid, b) * b + 9 * b * b + (depth * 5 * b * b if op == "repncspelan" else 0)
        return c1 * mid + 2 * per_branch + (mid + 2 * b) * out
    if op == "cblinear":
        return c1 * sum(layer["outs"])
    if op in ("detect", "dual_detect"):
        return 9 * c1 * max(c1 // 3, 256) * 4
    return 0


def check_size(layers: list[dict[str, Any]], origin: str, error: type[Exception]) -> int:
    """An estimate of the network's parameters from its channel widths (returned), refused above
    ``MAX_PARAMS``."""
    widths: list[int] = []
    total = 0
    for i, layer in enumerate(layers):
        op, srcs = layer["op"], layer["sources"]
        c1 = sum(widths[s] for s in srcs if 0 <= s < len(widths)) if srcs else 3
        out = layer.get("out", 0)
        total += _params(op, layer, c1, out)
        widths.append(out if "out" in layer else widths[srcs[-1]] if op == "cbfuse" and srcs else c1)
        if total > MAX_PARAMS:
            raise error(f"{origin}: layer {i} ({op}) brings the network to about {total:,} parameters; expected at "
                        f"most {MAX_PARAMS:,} (channels, depth or kernel far beyond any YOLOv9)")  # fmt: skip
    return total
