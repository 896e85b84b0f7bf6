"""The Triton ``config.pbtxt`` as y9 wrote it before issue 35: string templates of protobuf text format, kept here as
the slow reference that ``y9deploy.serving.triton_repo`` (which now builds Triton's own ``ModelConfig`` message)
must agree with, message for message (tests/deploy/test_triton_config.py)."""

from __future__ import annotations

import json

QUEUE_DELAY_US = 100
METADATA_KEY = "y9_metadata"
TRITON_TYPES = {
    "float32": "TYPE_FP32",
    "float16": "TYPE_FP16",
    "float64": "TYPE_FP64",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "int8": "TYPE_INT8",
    "uint8": "TYPE_UINT8",
    "bool": "TYPE_BOOL",
}


def old_preferred(model, max_batch_size: int) -> list[int]:
    """The preferred batch sizes the old code chose (``_batching``): an engine's profile opt and max up to
    ``max_batch_size``, a dynamic ONNX batch its max, a static batch none."""
    if max_batch_size == 0:
        return []
    if model.batch is not None:
        return sorted({b for b in (model.batch[1], max_batch_size) if b <= max_batch_size})
    return [max_batch_size]


def pbtxt_string(text: str) -> str:
    """``text`` as a double-quoted protobuf text-format string (C escapes; non-ASCII as UTF-8 octal bytes)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _dims(shape: tuple[int, ...]) -> str:
    return "[ " + ", ".join(str(d) for d in shape) + " ]"


def render_config(
    model, name: str, *, max_batch_size: int, preferred: list[int], instances: int, kind: str
) -> str:
    """The config.pbtxt text (protobuf text format of Triton's ModelConfig)."""
    lead = 1 if max_batch_size > 0 else 0  # Triton adds the batch dimension itself when max_batch_size > 0
    lines = [f"name: {pbtxt_string(name)}", f"platform: {pbtxt_string(model.platform)}",
             f"max_batch_size: {max_batch_size}"]  # fmt: skip
    for section, tensors in (("input", model.inputs), ("output", model.outputs)):
        lines.append(f"{section} [")
        body = [
            f"  {{\n    name: {pbtxt_string(t.name)}\n    data_type: {TRITON_TYPES[t.dtype]}\n    dims: {_dims(t.shape[lead:])}\n  }}"
            for t in tensors
        ]
        lines.append(",\n".join(body))
        lines.append("]")
    if max_batch_size > 0:
        pref = ", ".join(str(b) for b in preferred)
        lines.append(
            f"dynamic_batching {{\n  preferred_batch_size: [ {pref} ]\n"
            f"  max_queue_delay_microseconds: {QUEUE_DELAY_US}\n}}"
        )
    group = f"  {{\n    count: {instances}"
    if kind != "auto":
        group += f"\n    kind: KIND_{kind.upper()}"
    lines.append(f"instance_group [\n{group}\n  }}\n]")
    meta = json.dumps(model.metadata, sort_keys=True)
    lines.append(
        f"parameters {{\n  key: {pbtxt_string(METADATA_KEY)}\n  value {{\n    string_value: {pbtxt_string(meta)}\n  }}\n}}"
    )
    return "\n".join(lines) + "\n"
