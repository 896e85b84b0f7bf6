"""ONNX ``metadata_props`` written by ``y9 export`` and read back by every loader: the model facts
(``y9core.model_facts.ModelFacts``) as strings, in the form ``y9deploy.facts_metadata`` defines, plus the export's
own entries (``dynamic_batch``; ``nms_defaults`` of an end2end export: JSON {"score_threshold", "iou_threshold",
"max_output_boxes"}).

:func:`parse_metadata` needs neither onnx nor torch (a runtime can feed it onnxruntime's
``custom_metadata_map`` or an engine manifest's ``onnx_metadata``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from y9core.errors import ModelFileError
from y9core.model_facts import ModelFacts
from y9deploy.facts_metadata import (
    REQUIRED,
    facts_from_props,
    facts_to_props,
    input_size,
    nms_defaults,
    props_flag,
)

LETTERBOX = {"auto": False, "scaleup": True, "color": 114, "stride": 32}
REQUIRED_KEYS = REQUIRED


@dataclass(frozen=True)
class OnnxMetadata:
    """Parsed metadata of a y9 ONNX export: the model facts, the file's input size and its export entries."""

    facts: ModelFacts
    imgsz: tuple[int, int]  # the input (h, w) of this file; ``facts.imgsz`` is the trained size
    dynamic_batch: bool = False
    nms_defaults: dict[str, float] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.facts.names)

    @property
    def stride(self) -> list[float]:
        return [float(s) for s in self.facts.strides]

    @property
    def letterbox(self) -> dict[str, Any]:
        return self.facts.letterbox.to_dict()

    @property
    def model(self) -> str:
        return self.facts.model

    @property
    def source_sha256(self) -> str:
        return self.facts.source_sha256

    @property
    def y9_version(self) -> str:
        return self.facts.y9_version

    @property
    def end2end(self) -> bool:
        return self.facts.end2end

    @property
    def half(self) -> bool:
        return self.facts.half


def build_metadata(
    facts: ModelFacts,
    *,
    imgsz: tuple[int, int],
    dynamic_batch: bool,
    nms_defaults: Mapping[str, float] | None = None,
) -> dict[str, str]:
    """The ``metadata_props`` of an export of a model with ``facts`` at input size ``imgsz``, all strings."""
    return facts_to_props(facts, input_hw=imgsz, dynamic_batch=dynamic_batch, nms_defaults=nms_defaults)


def set_metadata(model: Any, props: Mapping[str, str]) -> None:
    """Replace ``model.metadata_props`` (onnx.ModelProto) with ``props``."""
    del model.metadata_props[:]
    for key, value in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def parse_metadata(props: Mapping[str, str], source: str = "the model") -> OnnxMetadata:
    """Strings -> :class:`OnnxMetadata`; ModelFileError naming ``source``, the entry and its value when a key
    is missing or malformed (the same checks as the runtime's)."""
    missing = [k for k in REQUIRED_KEYS if k not in props]
    if missing:
        raise ModelFileError(
            f"{source} lacks the y9 metadata {', '.join(missing)}; export it with `y9 export` (which records "
            "class names, stride, input size and letterbox settings)."
        )
    facts = facts_from_props(dict(props), where=str(source))
    return OnnxMetadata(
        facts=facts,
        imgsz=input_size(props, str(source)),
        dynamic_batch=props_flag(props, "dynamic_batch", str(source)),
        nms_defaults=nms_defaults(props, str(source)),
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
