"""Engines built without ``y9 build-engine`` (``trtexec``, a TensorRT script, often on the target device itself):
no manifest beside them, so their model facts come from elsewhere, and what a manifest would have let y9 check
before TensorRT deserializes the file is said once.

Where the facts come from, first found: the ``facts`` argument (``Detector(..., facts=PATH)``: the ONNX the engine
was built from, or a facts sidecar), ``<engine stem>.facts.json`` (the sidecar ``y9 export`` writes
beside every ONNX), ``<engine stem>.onnx``. The engine's inputs and outputs are read from the engine itself once it
is deserialized, and the facts are checked against them (class count, input size).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from y9core.errors import ModelFileError
from y9core.model_facts import ModelFacts

SIDECAR_SUFFIX = ".facts.json"


def sidecar_path(onnx_path: str | os.PathLike) -> Path:
    """``model.onnx`` -> ``model.facts.json`` (written by ``y9 export``)."""
    onnx_path = Path(onnx_path)
    return onnx_path.with_name(onnx_path.stem + SIDECAR_SUFFIX)


def find_facts_source(engine_path: Path, facts: str | os.PathLike | None = None) -> Path:
    """The file the facts of a manifest-less engine are read from; one sentence when there is none."""
    if facts is not None:
        source = Path(facts)
        if not source.is_file():
            raise FileNotFoundError(f"facts file {source} does not exist; expected the ONNX model {engine_path.name} "
                                    f"was built from, or its {SIDECAR_SUFFIX} sidecar.")  # fmt: skip
        return source
    for candidate in (engine_path.with_name(engine_path.stem + SIDECAR_SUFFIX), engine_path.with_suffix(".onnx")):
        if candidate.is_file():
            return candidate
    raise ModelFileError(
        f"{engine_path} has no y9 manifest ({engine_path.name}.json) and no model facts beside it; expected "
        f"{engine_path.stem}.onnx (the ONNX it was built from) or {engine_path.stem}{SIDECAR_SUFFIX} (written by "
        "`y9 export`) next to it, or pass the ONNX as Detector(..., facts=PATH), or build it with `y9 build-engine`."
    )


def read_source_facts(source: Path, *, input_hw: tuple[int, int] | None = None, nc: int | None = None) -> ModelFacts:
    """The facts in ``source`` (an ONNX file's metadata, or a ``.facts.json`` sidecar), checked against the
    engine's ``input_hw`` and class count ``nc`` when known."""
    if source.suffix.lower() == ".onnx":
        from y9deploy.facts_metadata import facts_from_props
        from y9deploy.model_file.onnx_digest import metadata_props, verify

        verify(source)
        props = metadata_props(source)
        if not props:
            raise ModelFileError(f"{source} holds no y9 metadata; expected an ONNX model written by `y9 export`.")
        return facts_from_props(props, where=str(source), input_hw=input_hw, nc=nc)
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{source} is not valid JSON ({exc}); expected a facts sidecar of `y9 export`.") from None
    facts = ModelFacts.from_dict(raw, str(source))
    facts.check_classes(nc, str(source))
    return facts


def unchecked_note(engine_path: Path, source: Path, facts: ModelFacts) -> str:
    """The sentence said once for a manifest-less engine: what could not be checked, and where facts came from."""
    return (
        f"{engine_path} has no y9 manifest: its TensorRT version, target GPU and integrity cannot be checked before "
        f"TensorRT deserializes it, nor that it was built from {source.name}; its model facts come from "
        f"{source} ({facts.nc} classes, trained at {facts.imgsz[0]}x{facts.imgsz[1]})."
    )
