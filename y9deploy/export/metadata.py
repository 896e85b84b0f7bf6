"""ONNX ``metadata_props`` written by ``y9 export`` and read back by every loader.

All values are strings (JSON for structured values): ``names`` (JSON list), ``stride`` (JSON list),
``imgsz`` (JSON [h, w]), ``letterbox`` (JSON {"auto", "scaleup", "color", "stride"}), ``model``,
``source_sha256``, ``y9_version``, ``end2end``/``dynamic_batch``/``half`` ("0"/"1"); end2end exports also
``nms_defaults`` (JSON {"score_threshold", "iou_threshold", "max_output_boxes"}).

:func:`parse_metadata` needs neither onnx nor torch (a runtime can feed it onnxruntime's
``custom_metadata_map`` or an engine manifest's ``onnx_metadata``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from y9core.errors import ModelFileError

LETTERBOX = {"auto": False, "scaleup": True, "color": 114, "stride": 32}
REQUIRED_KEYS = ("names", "stride", "imgsz", "letterbox", "model")


@dataclass
class OnnxMetadata:
    """Parsed metadata of a y9 ONNX export."""

    names: list[str]
    stride: list[float]
    imgsz: tuple[int, int]
    letterbox: dict[str, Any]
    model: str
    source_sha256: str = ""
    y9_version: str = ""
    end2end: bool = False
    dynamic_batch: bool = False
    half: bool = False
    nms_defaults: dict[str, float] = field(default_factory=dict)


def build_metadata(
    *,
    names: Sequence[str],
    stride: Sequence[float],
    imgsz: tuple[int, int],
    model: str,
    source_sha256: str,
    end2end: bool,
    dynamic_batch: bool,
    half: bool,
    nms_defaults: Mapping[str, float] | None = None,
) -> dict[str, str]:
    """The ``metadata_props`` of an export, all strings."""
    from y9deploy import __version__

    props = {
        "names": json.dumps(list(names)),
        "stride": json.dumps([float(s) for s in stride]),
        "imgsz": json.dumps([int(imgsz[0]), int(imgsz[1])]),
        "letterbox": json.dumps(LETTERBOX),
        "model": str(model),
        "source_sha256": source_sha256,
        "y9_version": __version__,
        "end2end": "1" if end2end else "0",
        "dynamic_batch": "1" if dynamic_batch else "0",
        "half": "1" if half else "0",
    }
    if nms_defaults:
        props["nms_defaults"] = json.dumps(dict(nms_defaults))
    return props


def set_metadata(model: Any, props: Mapping[str, str]) -> None:
    """Replace ``model.metadata_props`` (onnx.ModelProto) with ``props``."""
    del model.metadata_props[:]
    for key, value in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def parse_metadata(props: Mapping[str, str], source: str = "the model") -> OnnxMetadata:
    """Strings -> :class:`OnnxMetadata`; ModelFileError naming ``source``, the entry and its value when a key
    is missing or malformed (the same checks as the runtime's ``y9deploy.runtime.backend.parse_metadata``)."""
    from y9deploy.runtime.backend import parse_metadata as parse_checked

    missing = [k for k in REQUIRED_KEYS if k not in props]
    if missing:
        raise ModelFileError(
            f"{source} lacks the y9 metadata {', '.join(missing)}; export it with `y9 export` (which records "
            "class names, stride, input size and letterbox settings)."
        )
    info = parse_checked(dict(props), where=str(source))
    raw_nms = props.get("nms_defaults", "{}")
    try:
        nms = json.loads(raw_nms)
        nms_defaults = {str(k): float(v) for k, v in nms.items()}
    except (ValueError, TypeError, AttributeError):
        raise ModelFileError(
            f"{source}: metadata entry 'nms_defaults' = {raw_nms!r} is malformed; expected a JSON object of "
            "numbers (score_threshold, iou_threshold, max_output_boxes)."
        ) from None
    return OnnxMetadata(
        names=info.names,
        stride=[float(s) for s in info.stride],
        imgsz=info.imgsz,
        letterbox=info.letterbox,
        model=props["model"],
        source_sha256=props.get("source_sha256", ""),
        y9_version=props.get("y9_version", ""),
        end2end=info.end2end,
        dynamic_batch=info.dynamic_batch,
        half=info.half,
        nms_defaults=nms_defaults,
    )


def read_metadata(path: str | os.PathLike) -> OnnxMetadata:
    """The metadata of an ONNX file (needs ``onnx``; reads the graph without external weights)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ModelFileError(f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc}).") from exc
    return parse_metadata({p.key: p.value for p in model.metadata_props}, str(path))
