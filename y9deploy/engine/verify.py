"""Accuracy check of a built engine before it is kept: ``y9 build-engine model.onnx --verify data.yaml``.

The engine (or, where it cannot run on this machine, e.g. an ahead-of-time build for another GPU, the FP16 ONNX
it was built from: the very bytes the TensorRT-RTX parser read) is scored on a data.yaml split through
``Detector`` and the project's evaluator (``y9deploy.validate_deployed.val_deployed``), and so is the reference:
the ONNX given to the builder, or the source model named by ``reference`` (a ``.pt`` checkpoint or another
ONNX, run at the engine's input size). The build fails when mAP50-95 drops by more than ``threshold_points``
(percentage points, default 0.5).

``build_engine_verified`` builds into a temporary folder beside the output and moves the engine and its
manifest into place only when the check passes: a failed check leaves any earlier engine at that path as it was.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from y9core.errors import BackendUnavailableError, EngineMismatchError, Y9Error
from y9core.files.atomic_write import publish
from y9core.wording import change, plural

DEFAULT_THRESHOLD_POINTS = 0.5


class EngineVerificationError(Y9Error):
    """A built engine scored too far below its source model; it was not kept."""


@dataclass(frozen=True)
class VerifyResult:
    """Scores of the built engine (or its FP16 ONNX) and of the reference, on one split.

    ``candidate_kind``: ``"engine"`` (the engine ran here), ``"fp16-onnx"`` (the FP16 ONNX the engine was built
    from, run by ONNX Runtime) or ``"onnx"`` (an FP32 engine that cannot run here: its ONNX itself).
    mAP values are fractions in [0, 1]; ``threshold_points`` and ``drop_points`` are percentage points.
    """

    data: Path
    split: str
    reference: Path
    candidate: Path
    candidate_kind: str
    reference_map50_95: float
    candidate_map50_95: float
    reference_map50: float
    candidate_map50: float
    threshold_points: float
    images: int
    reason: str = ""  # why the engine itself was not run (empty when it was)

    @property
    def drop_points(self) -> float:
        return 100.0 * (self.reference_map50_95 - self.candidate_map50_95)

    @property
    def passed(self) -> bool:
        return not math.isnan(self.drop_points) and self.drop_points <= self.threshold_points

    def summary(self) -> str:
        what = {
            "engine": f"engine {self.candidate.name}",
            "fp16-onnx": "the FP16 ONNX the engine was built from",
            "onnx": f"its ONNX {self.candidate.name}",
        }[self.candidate_kind]
        return (
            f"{what}: mAP50-95 {100 * self.candidate_map50_95:.2f} (mAP50 {100 * self.candidate_map50:.2f}) vs "
            f"{100 * self.reference_map50_95:.2f} ({100 * self.reference_map50:.2f}) for {self.reference.name} on "
            f"{plural(self.images, 'image')} of {self.data} '{self.split}': {change(-self.drop_points)} "
            f"(threshold {self.threshold_points:g})"
        )


def _check_threshold(threshold_points: float) -> float:
    t = float(threshold_points)
    if not (t >= 0 and math.isfinite(t)):
        raise ValueError(
            f"verify threshold {threshold_points!r} is not a non-negative number of mAP50-95 points; "
            "expected e.g. 0.5"
        )
    return t


def _engine_unrunnable(engine_path: Path, onnx_path: Path) -> str:
    """Why ``engine_path`` cannot run on this machine ("" when it can, as far as its manifest tells)."""
    from y9deploy.engine.manifest import check_engine_for_host

    try:
        check_engine_for_host(engine_path, onnx_path=onnx_path)
    except (EngineMismatchError, BackendUnavailableError) as exc:
        return str(exc)
    return ""


def _stand_in(engine_path: Path, onnx_path: Path, workdir: Path) -> tuple[Path, str]:
    """What to score instead of an engine that cannot run here: (path, kind)."""
    from y9deploy.engine.builder import parser_onnx_bytes
    from y9deploy.engine.flavour import load_flavour
    from y9deploy.engine.manifest import read_manifest
    from y9deploy.engine.onnx_info import inspect_onnx

    man = read_manifest(engine_path)
    info = inspect_onnx(onnx_path)
    fp16 = man.precision == "fp16" and not info.half
    if not fp16:
        return onnx_path, "onnx"
    data, notes = parser_onnx_bytes(info, load_flavour(man.flavour), True)
    if not notes:  # the full TensorRT sets FP16 by a builder flag: the FP16 conversion is the closest proxy
        from y9deploy.onnx_fp16 import convert_to_fp16

        data = convert_to_fp16(info.model, keep_io_types=True, source=str(onnx_path)).SerializeToString()
    from y9deploy.model_file.onnx_digest import seal

    path = workdir / f"{onnx_path.stem}-fp16.onnx"
    path.write_bytes(seal(data))  # a file y9 made: sealed with its own digest like an export
    return path, "fp16-onnx"


def verify_engine(
    engine_path: str | os.PathLike,
    onnx_path: str | os.PathLike,
    data: str | os.PathLike,
    *,
    reference: str | os.PathLike | None = None,
    threshold_points: float = DEFAULT_THRESHOLD_POINTS,
    split: str = "val",
    device: str | None = None,
    workers: int = 4,
) -> VerifyResult:
    """Score ``engine_path`` (built from ``onnx_path``) against ``reference`` (default: ``onnx_path``) on ``data``.

    Returns a ``VerifyResult`` (``passed`` says whether the drop is within ``threshold_points``); raises only
    for bad input (missing files, a reference of another class count, a split without labels).
    """
    from y9deploy.engine.onnx_info import inspect_onnx
    from y9deploy.validate_deployed import val_deployed

    threshold = _check_threshold(threshold_points)
    engine_path, onnx_path = Path(engine_path), Path(onnx_path)
    ref = Path(reference) if reference is not None else onnx_path
    hw = inspect_onnx(onnx_path).imgsz
    kw: dict[str, Any] = dict(split=split, device=device, workers=workers)
    with tempfile.TemporaryDirectory(prefix="y9-verify-") as tmp:
        cand, kind, reason = engine_path, "engine", _engine_unrunnable(engine_path, onnx_path)
        got = None
        if not reason:
            try:
                got = val_deployed(data, engine_path, **kw)
            except BackendUnavailableError as exc:  # e.g. the TensorRT runtime's CUDA bindings are missing
                reason = str(exc)
        if got is None:
            cand, kind = _stand_in(engine_path, onnx_path, Path(tmp))
            got = val_deployed(data, cand, **kw)
    want = val_deployed(data, ref, imgsz=hw if ref.suffix.lower() in (".pt", ".pth") else None, **kw)
    if want.targets == 0:
        raise ValueError(
            f"{data} split '{split}' has no labelled boxes; expected labels to measure mAP50-95 against."
        )
    return VerifyResult(
        data=Path(data),
        split=split,
        reference=ref,
        candidate=engine_path if kind == "engine" else cand,
        candidate_kind=kind,
        reference_map50_95=want.metrics["map50_95"],
        candidate_map50_95=got.metrics["map50_95"],
        reference_map50=want.metrics["map50"],
        candidate_map50=got.metrics["map50"],
        threshold_points=threshold,
        images=got.images,
        reason=reason,
    )


def build_engine_verified(
    onnx_path: str | os.PathLike,
    engine_path: str | os.PathLike | None = None,
    *,
    data: str | os.PathLike,
    reference: str | os.PathLike | None = None,
    threshold_points: float = DEFAULT_THRESHOLD_POINTS,
    split: str = "val",
    device: str | None = None,
    **build_kwargs: Any,
) -> tuple[Any, VerifyResult]:
    """``build_engine_report`` + ``verify_engine``; the engine and manifest reach ``engine_path`` only when the
    check passes. Returns ``(BuildResult, VerifyResult)``; raises ``EngineVerificationError`` otherwise."""
    from y9core.data.yaml_config import load_data_yaml
    from y9deploy.engine.builder import build_engine_report
    from y9deploy.engine.manifest import manifest_path

    _check_threshold(threshold_points)
    load_data_yaml(data, require=(split,))  # bad data or a missing reference: refused before the build
    if reference is not None and not Path(reference).is_file():
        raise FileNotFoundError(f"reference model {reference} does not exist; expected a .pt or .onnx file.")
    onnx_path = Path(onnx_path)
    final = Path(engine_path) if engine_path is not None else onnx_path.with_suffix(".engine")
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.verify-", dir=final.parent))
    try:
        built = build_engine_report(onnx_path, stage / final.name, **build_kwargs)
        check = verify_engine(
            built.engine_path,
            onnx_path,
            data,
            reference=reference,
            threshold_points=threshold_points,
            split=split,
            device=device,
        )
        if not check.passed:
            raise EngineVerificationError(
                f"engine verification failed, {check.summary()}; {final} was not written (fix the model or "
                "raise --verify-threshold)."
            )
        check = replace(check, reason=check.reason.replace(str(built.engine_path), str(final)))
        if check.candidate_kind == "engine":
            check = replace(check, candidate=final)
        manifest = manifest_path(final)
        publish(built.engine_path, final)  # a target claimed new is never replaced (y9core.files.output_file)
        publish(built.manifest_path, manifest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    twin = built.trtexec.replace(str(built.engine_path), str(final))
    return replace(built, engine_path=final, manifest_path=manifest, trtexec=twin), check
