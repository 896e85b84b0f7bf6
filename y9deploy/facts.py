"""``read_facts(path)``: the model facts (``y9core.model_facts.ModelFacts``) of any artifact, and
``inspect_facts(path)``: the same with what was checked and what is only claimed (``y9 info``).

Artifacts: a ``.pt`` checkpoint (through the torch backend's loader: the one place a deployment reads a checkpoint),
an ONNX model (opened exactly as a Detector opens it: digest, graph and metadata checked; onnxruntime only), a
TensorRT engine (its manifest, or without one its ONNX / facts sidecar; no TensorRT needed), a Triton model folder
(its ``y9.json``) or a ``.facts.json`` sidecar. Nothing but the ``.pt`` path imports torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from y9core.errors import ModelFileError
from y9core.model_facts import ModelFacts
from y9deploy.runtime.backends.loading import ENGINE_SUFFIXES, ONNX_SUFFIXES, TORCH_SUFFIXES


@dataclass(frozen=True)
class FactsReport:
    """The facts of one artifact, and how far they were verified here.

    ``checked``: what was verified (each a short sentence); ``claimed``: what the file states but nothing here can
    verify (an engine's bytes are only understood by TensorRT on its GPU); ``details``: the artifact's own
    description (input, outputs, batch, builder ...)."""

    path: Path
    kind: str  # "checkpoint" | "onnx" | "engine" | "triton" | "sidecar"
    facts: ModelFacts
    checked: tuple[str, ...] = ()
    claimed: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "kind": self.kind, "facts": self.facts.to_dict(),
                "checked": list(self.checked), "claimed": list(self.claimed), "details": self.details}  # fmt: skip


def read_facts(path: str | os.PathLike) -> ModelFacts:
    """The model facts of ``path`` (see the module docstring); one sentence when the file is missing or its facts
    are malformed or disagree with the model it holds."""
    return inspect_facts(path).facts


def inspect_facts(path: str | os.PathLike) -> FactsReport:
    """The facts of ``path`` with what was checked and what is only claimed."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; expected a .pt, .onnx, engine, Triton model folder or "
                                ".facts.json file.")  # fmt: skip
    if path.is_dir():
        return _triton(path)
    suffix = path.suffix.lower()
    if path.name.endswith(".facts.json"):
        from y9deploy.runtime.backends.foreign_engine import read_source_facts

        return FactsReport(path, "sidecar", read_source_facts(path), ("entries: types and ranges",))
    if suffix in TORCH_SUFFIXES:
        return _checkpoint(path)
    if suffix in ONNX_SUFFIXES:
        return _onnx(path)
    if suffix in ENGINE_SUFFIXES:
        return _engine(path)
    raise ValueError(f"{path} has suffix {suffix or '(none)'!r}; expected a .pt checkpoint, an .onnx model, a TensorRT "
                     "engine (.engine, .trt, .plan), a Triton model folder or a .facts.json sidecar.")  # fmt: skip


def _checkpoint(path: Path) -> FactsReport:
    from y9deploy.runtime.backends.torch_backend import checkpoint_digest, checkpoint_facts

    facts = checkpoint_facts(path)
    digest = checkpoint_digest(path)
    return FactsReport(path, "checkpoint", facts, (
        {"verified": "zip CRCs, tensor digest and entry types of the checkpoint",
         "none": "zip CRCs and entry types of the checkpoint; not checked: no tensor digest recorded (written by an "
                 "older y9, or edited)",
         "official": "zip CRCs of the checkpoint; not checked: no digest (a checkpoint not written by y9 records "
                     "none)"}[digest],
        "class names: one per class of the model's head; strides: the architecture's",
        "source sha256: this file's",
    ))  # fmt: skip


def _onnx(path: Path) -> FactsReport:
    from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend(path, "cpu", threads=1)  # every load-time check of a Detector
    try:
        lo, hi = backend.batch_range
        details = {
            "input": {"name": backend.input_name, "shape": [lo if lo == hi else "batch", 3, *backend.input_hw],
                      "dtype": backend.input_dtype.name},  # fmt: skip
            "outputs": {name: [str(d) for d in shape] for name, shape in backend.output_shapes.items()},
            "batch": [lo, hi],
            "digest": "verified" if backend.digest_checked else "none recorded",
        }
        facts = backend.info
    finally:
        backend.close()
    checked = [
        "input size, precision and end-to-end outputs: from the graph itself",
        "class names: one per class the graph outputs" if facts.nc else "class names: none recorded",
        "sha256 digest sealed by y9 export: every byte unchanged" if details["digest"] == "verified"
        else "no sha256 digest recorded (not written by y9 export, or edited): bytes not checked",
    ]  # fmt: skip
    return FactsReport(path, "onnx", facts, tuple(checked), (), details)


def _unreadable_metadata(man: Any, where: Path) -> str | None:
    """Why the ONNX metadata a manifest copies cannot be read as model facts, or None when it can (or holds none of
    y9's entries)."""
    import warnings

    from y9core.errors import ModelFileError
    from y9deploy.facts_metadata import FACT_KEYS, facts_from_props

    if not any(k in man.onnx_metadata for k in FACT_KEYS):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            facts_from_props(man.onnx_metadata, where=str(where), input_hw=tuple(man.imgsz))
    except ModelFileError as exc:
        return str(exc).removeprefix(f"{where}: ").rstrip(".")
    return None


def _engine(path: Path) -> FactsReport:
    from y9deploy.engine.manifest import check_manifest, file_sha256, manifest_path, read_manifest

    if not manifest_path(path).is_file():
        from y9deploy.runtime.backends.foreign_engine import find_facts_source, read_source_facts

        source = find_facts_source(path)
        return FactsReport(path, "engine", read_source_facts(source), (), (
            f"facts: those of {source.name}, found beside it (no y9 manifest says the engine was built from it)",
            "TensorRT version, target GPU, batch profile and inputs/outputs: unknown until TensorRT deserializes it",
        ), {"manifest": None, "facts_source": str(source)})  # fmt: skip
    man = read_manifest(path)
    # checked against its own flavour, version and GPU: only the integrity checks (size, sha256) remain
    check_manifest(path, flavour=man.flavour, version=man.trt_version, compute_capability=man.compute_capability)
    facts = man.model_facts(manifest_path(path))
    unreadable = _unreadable_metadata(man, manifest_path(path))
    checked = [
        f"size ({man.engine_bytes:,} bytes) and sha256 of the engine: as its manifest records",
        "manifest entries: types, ranges, and agreement (profile, batch, input size, one class name per output class)"
        + ("" if unreadable is None else ", except its unreadable 'onnx_metadata'"),
    ]
    claimed = [] if unreadable is None else [
        f"onnx_metadata: NOT checked, it cannot be read ({unreadable}); a damaged or hand-edited manifest"
    ]
    claimed += [
        f"facts, input size {man.imgsz[0]}x{man.imgsz[1]}, batch {':'.join(map(str, man.batch))}, inputs and outputs: "
        f"as the manifest states; only {man.flavour} {man.trt_version} on a {man.compute_capability} GPU can read "
        "them from the engine itself",
    ]
    onnx = path.with_name(man.onnx_file)
    if onnx.is_file() and file_sha256(onnx) == man.onnx_sha256:
        from y9deploy.facts_metadata import input_size
        from y9deploy.model_file.onnx_digest import metadata_props
        from y9deploy.runtime.backends.foreign_engine import read_source_facts

        props = metadata_props(onnx)
        recorded = "imgsz" in props  # else a foreign ONNX: the builder took the size from its graph
        differ = read_source_facts(onnx, input_hw=None if recorded else (man.imgsz[0], man.imgsz[1])).differences(facts)
        if recorded and list(input_size(props, str(onnx))) != list(man.imgsz):
            differ.append(f"input size: {list(input_size(props, str(onnx)))} vs {man.imgsz}")
        if differ:
            raise ModelFileError(f"{manifest_path(path)}: its model facts differ from those of {onnx}, which it was "
                                 f"built from ({'; '.join(differ[:3])}); a damaged or hand-edited manifest.")  # fmt: skip
        checked.append(f"facts: equal to those of {onnx.name} beside it, the ONNX it was built from (sha256 matches)")
    details = {"engine_bytes": man.engine_bytes, "engine_sha256": man.engine_sha256, "flavour": man.flavour, "trt_version": man.trt_version, "compute_capability": man.compute_capability,
               "ahead_of_time": man.ahead_of_time, "onnx_file": man.onnx_file, "precision": man.precision,
               "batch": man.batch, "input_size": man.imgsz, "inputs": man.inputs, "outputs": man.outputs}  # fmt: skip
    return FactsReport(path, "engine", facts, tuple(checked), tuple(claimed), details)


def _triton(folder: Path) -> FactsReport:
    sidecar = folder / "y9.json"
    if not sidecar.is_file():
        raise ModelFileError(f"{folder} is a folder without y9.json; expected a Triton model folder written by "
                             "`y9 triton` (or pass a model file).")  # fmt: skip
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{sidecar} is not valid JSON ({exc}); write the repository again with `y9 triton`.") from None
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        raise ModelFileError(f"{sidecar} holds no model facts ('facts'); write the repository again with `y9 triton`.")
    facts = ModelFacts.from_dict(data["facts"], str(sidecar))
    return FactsReport(folder, "triton", facts, ("y9.json entries: types and ranges",), (
        f"the served model ({data.get('platform', '?')}) is the one these facts describe: as y9.json states",
    ), {"platform": data.get("platform"), "source": data.get("source")})  # fmt: skip
