"""The engine manifest ``<engine>.json`` (e.g. ``gs.engine.json``) and the check every engine loader runs.

A TensorRT engine runs only with the exact TensorRT flavour and version that built it, on GPUs of the
compute capability it was built for. The manifest records those facts, plus the engine's own size and
sha256 (a truncated or corrupt copy is caught before TensorRT sees it), the ONNX it came from, I/O tensors,
profile, precision, the ONNX metadata and the model facts (``facts``: class names, trained size, letterbox ...),
so that a loader needs nothing but the engine and its manifest. Every entry is checked by type and range when it
is read (``y9deploy.engine.manifest_schema``).

Imports neither torch nor TensorRT (:func:`check_engine_for_host` imports the flavour lazily).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from y9core.errors import EngineMismatchError, ModelFileError
from y9core.model_facts import ModelFacts
from y9deploy.engine.manifest_schema import check_entries

MANIFEST_FORMAT = "y9-engine-manifest/1"
MAX_MANIFEST_BYTES = 1 << 24  # a manifest is a few kB (class names included); anything far larger is not one

GPU_FAMILIES = {
    "sm75": "Turing, e.g. RTX 20xx / T4",
    "sm80": "Ampere, e.g. A100",
    "sm86": "Ampere, e.g. RTX 30xx / A10",
    "sm87": "Ampere, e.g. Jetson Orin",
    "sm89": "Ada, e.g. RTX 40xx / L4 / L40",
    "sm90": "Hopper, e.g. H100 / H200",
    "sm100": "Blackwell, e.g. B200",
    "sm120": "Blackwell, e.g. RTX 50xx",
    "sm121": "Blackwell, e.g. DGX Spark",
}


def manifest_path(engine_path: str | os.PathLike) -> Path:
    """``model.engine`` -> ``model.engine.json``."""
    engine_path = Path(engine_path)
    return engine_path.with_name(engine_path.name + ".json")


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _gpu(cc: str) -> str:
    family = GPU_FAMILIES.get(cc)
    return f"{cc} ({family})" if family else cc


@dataclass
class EngineManifest:
    """What an engine was built from, for and with. Shapes use -1 for a dynamic dimension."""

    engine_file: str
    engine_bytes: int
    engine_sha256: str
    flavour: str  # "tensorrt" | "tensorrt_rtx"
    trt_version: str
    compute_capability: str  # "sm89"
    ahead_of_time: bool
    onnx_file: str
    onnx_sha256: str
    precision: str  # "fp16" | "fp32" | "int8" (a QDQ INT8 ONNX: explicit quantization)
    inputs: list[dict[str, Any]]  # [{"name", "shape", "dtype"}]
    outputs: list[dict[str, Any]]
    profile: dict[str, dict[str, list[int]]]  # {"images": {"min": [..], "opt": [..], "max": [..]}}
    batch: list[int]  # [min, opt, max]
    imgsz: list[int]  # [h, w]
    end2end: bool
    onnx_metadata: dict[str, str]
    y9_version: str
    built_at: str  # ISO 8601, UTC
    build_seconds: float
    workspace_gb: float
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] | None = None  # ModelFacts.to_dict() (None: a manifest of an older y9)
    format: str = MANIFEST_FORMAT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def input_names(self) -> list[str]:
        return [t["name"] for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t["name"] for t in self.outputs]

    @property
    def names(self) -> list[str]:
        """Class names from the model facts (empty when the ONNX had none)."""
        raw = self.onnx_metadata.get("names")
        if self.facts is None and raw:
            return [str(n) for n in json.loads(raw)]
        return list(self.facts["names"]) if self.facts else []

    def model_facts(self, where: str | os.PathLike) -> ModelFacts:
        """The model facts this manifest records (an older manifest: read from its ``onnx_metadata``), checked
        against its own outputs' class count; one ``ModelFileError`` sentence naming ``where`` if malformed."""
        from y9deploy.facts_metadata import facts_from_props

        where = str(where)
        first = self.outputs[0]["shape"] if self.outputs else []
        nc = int(first[1]) - 4 if not self.end2end and len(first) == 3 and first[1] > 4 else None
        if self.facts is not None:
            facts = ModelFacts.from_dict(self.facts, where)
            facts.check_classes(nc, where)
        else:
            facts = facts_from_props(self.onnx_metadata, where=where, input_hw=tuple(self.imgsz), nc=nc)
        if facts.end2end != self.end2end or facts.precision != self.precision:
            raise ModelFileError(
                f"{where}: its model facts say end2end {facts.end2end}, {facts.precision} but the manifest says "
                f"end2end {self.end2end}, {self.precision}; expected the same (a damaged or hand-edited manifest)."
            )
        return facts


def write_manifest(engine_path: str | os.PathLike, manifest: EngineManifest) -> Path:
    """Write ``<engine>.json`` atomically (temporary file, then rename); returns its path."""
    from y9core.files.atomic_write import atomic_write

    return atomic_write(manifest_path(engine_path), json.dumps(manifest.to_dict(), indent=2) + "\n")


def read_manifest(engine_path: str | os.PathLike) -> EngineManifest:
    """Read the manifest beside ``engine_path``; ModelFileError if it is missing, not JSON or incomplete."""
    path = manifest_path(engine_path)
    if not path.is_file():
        raise ModelFileError(
            f"{engine_path} has no manifest {path.name} beside it; rebuild the engine with `y9 build-engine`, "
            "which records the GPU and TensorRT version it was built for"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ModelFileError(
            f"{path} is {path.stat().st_size:,} bytes; expected an engine manifest of at most "
            f"{MAX_MANIFEST_BYTES:,} bytes (rebuild the engine with `y9 build-engine`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(
            f"{path} is not valid JSON ({exc}); rebuild the engine with `y9 build-engine`"
        ) from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ModelFileError(f"{path} has format {found!r}, expected {MANIFEST_FORMAT!r}; rebuild the engine")
    known = {f.name for f in fields(EngineManifest)}
    required = {f.name for f in fields(EngineManifest) if f.name not in ("notes", "format")}
    missing = sorted(required - data.keys())
    if missing:
        raise ModelFileError(f"{path} lacks {', '.join(missing)}; rebuild the engine with `y9 build-engine`")
    check_entries(data, path)
    return EngineManifest(**{k: v for k, v in data.items() if k in known})


def check_manifest(
    engine_path: str | os.PathLike,
    *,
    flavour: str,
    version: str,
    compute_capability: str | None,
    onnx_path: str | os.PathLike | None = None,
    verify_sha256: bool = True,
) -> EngineManifest:
    """Check that ``engine_path`` can run here, before TensorRT deserializes it.

    ``flavour`` (``"tensorrt"``/``"tensorrt_rtx"``) and ``version`` describe the TensorRT that will load it,
    ``compute_capability`` this machine's GPU (``"sm89"``, ``"8.9"``; None: no GPU). With ``onnx_path`` the
    engine must have been built from exactly that ONNX file. Raises ModelFileError (missing, truncated or
    corrupt engine, bad manifest) or EngineMismatchError (other flavour, version, GPU or ONNX), each one
    sentence saying what to do; returns the manifest.
    """
    from y9deploy.engine.flavour import DISPLAY, RTX_TARGETS, normalize_cc

    engine_path = Path(engine_path)
    if not engine_path.is_file():
        raise ModelFileError(f"engine file {engine_path} does not exist")
    man = read_manifest(engine_path)
    size = engine_path.stat().st_size
    if size != man.engine_bytes:
        raise ModelFileError(
            f"{engine_path} is {size} bytes but its manifest records {man.engine_bytes}: the file is truncated "
            "or was replaced; copy it again or rebuild it with `y9 build-engine`"
        )
    if verify_sha256:  # integrity first: a damaged file is damaged on any machine
        digest = file_sha256(engine_path)
        if digest != man.engine_sha256:
            raise ModelFileError(
                f"{engine_path} is corrupt or was modified: its sha256 {digest[:16]}... differs from the "
                f"{man.engine_sha256[:16]}... its manifest records; copy it again or rebuild it"
            )
    built_with = f"{DISPLAY.get(man.flavour, man.flavour)} {man.trt_version}"
    if man.flavour != flavour:
        raise EngineMismatchError(
            f"{engine_path} was built with {built_with} but is being loaded with "
            f"{DISPLAY.get(flavour, flavour)} {version}; a TensorRT engine runs only with the flavour that "
            "built it: rebuild it from the ONNX with this one, or install the other"
        )
    if man.trt_version != version:
        raise EngineMismatchError(
            f"{engine_path} was built with {built_with} but {DISPLAY.get(flavour, flavour)} {version} is "
            "installed; engines run only with the exact version that built them: rebuild it from the ONNX "
            f"({man.onnx_file}) with `y9 build-engine`, or install version {man.trt_version}"
        )
    here = normalize_cc(compute_capability)
    if here is None:
        raise EngineMismatchError(
            f"{engine_path} was built for {_gpu(man.compute_capability)} GPUs but this machine has no NVIDIA "
            f"GPU; run it on a {man.compute_capability} GPU, or run the ONNX model ({man.onnx_file}) with "
            "onnxruntime instead"
        )
    if here != man.compute_capability:
        how = (
            f"`y9 build-engine {man.onnx_file} --target {here}` with TensorRT-RTX, or on this machine with tensorrt"
            if here in RTX_TARGETS
            else f"`y9 build-engine {man.onnx_file}` on this machine with the full tensorrt package "
            "(TensorRT-RTX does not support this GPU)"
        )
        raise EngineMismatchError(
            f"{engine_path} was built for {_gpu(man.compute_capability)} GPUs but this GPU is {_gpu(here)}; "
            f"rebuild it from {man.onnx_file} for this GPU ({how})"
        )
    if onnx_path is not None:
        digest = file_sha256(onnx_path)
        if digest != man.onnx_sha256:
            raise EngineMismatchError(
                f"{onnx_path} changed since {engine_path} was built from it (sha256 {digest[:16]}... vs "
                f"{man.onnx_sha256[:16]}... in the manifest); rebuild the engine with `y9 build-engine`"
            )
    return man


def check_engine_for_host(
    engine_path: str | os.PathLike,
    *,
    flavour: str | None = None,
    device: int = 0,
    onnx_path: str | os.PathLike | None = None,
) -> EngineManifest:
    """:func:`check_manifest` against the TensorRT installed here (``flavour``: None = the one the manifest
    names, if installed) and the GPU ``device`` of this machine."""
    from y9deploy.engine.flavour import load_flavour
    from y9deploy.engine.gpu import current_compute_capability

    man = read_manifest(engine_path)
    fl = load_flavour(flavour or man.flavour)
    return check_manifest(
        engine_path,
        flavour=fl.name,
        version=fl.version,
        compute_capability=current_compute_capability(device),
        onnx_path=onnx_path,
    )
