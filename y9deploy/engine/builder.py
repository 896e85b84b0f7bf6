"""ONNX -> TensorRT engine (+ manifest ``<engine>.json``), with ``tensorrt`` or ``tensorrt_rtx``.

One builder for both flavours; every difference between them is in :mod:`y9deploy.engine.flavour`.
TensorRT 10 APIs only: ``set_memory_pool_limit(WORKSPACE, ...)``, ``build_serialized_network``, named
I/O tensors, one optimization profile for the ``images`` input (batch min/opt/max, H and W from the ONNX).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from y9core.errors import ModelFileError, Y9Error
from y9core.files.atomic_write import atomic_write, ensure_writable
from y9deploy.engine.flavour import Flavour, load_flavour, normalize_cc
from y9deploy.engine.manifest import EngineManifest, file_sha256, write_manifest
from y9deploy.engine.onnx_info import INPUT_NAME, OnnxInfo, detector_facts, inspect_onnx
from y9deploy.engine.trtexec import trtexec_command

log = logging.getLogger(__name__)

DEFAULT_DYNAMIC_BATCH = (1, 4, 16)


@dataclass
class BuildResult:
    """What :func:`build_engine_report` did; ``notes`` are sentences worth showing the user."""

    engine_path: Path
    manifest_path: Path
    manifest: EngineManifest
    seconds: float
    notes: list[str] = field(default_factory=list)
    trtexec: str = ""  # the equivalent trtexec command (same profile, precision, workspace)


def parse_batch(value: Any) -> tuple[int, int, int]:
    """``"1:4:16"``, ``(1, 4, 16)``, ``8`` or ``"8"`` -> ``(min, opt, max)``; ValueError unless
    1 <= min <= opt <= max."""
    text = value
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(":")]
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"batch {value!r} is not understood; expected N or MIN:OPT:MAX, e.g. 1:4:16"
            ) from None
    elif isinstance(value, int):
        nums = [value]
    else:
        nums = [int(v) for v in value]
        text = ":".join(str(v) for v in nums)
    if len(nums) == 1:
        nums = nums * 3
    if len(nums) != 3:
        raise ValueError(f"batch {text!r} is not understood; expected N or MIN:OPT:MAX, e.g. 1:4:16")
    lo, opt, hi = nums
    if not (1 <= lo <= opt <= hi):
        raise ValueError(f"batch profile {lo}:{opt}:{hi} is not 1 <= min <= opt <= max")
    return lo, opt, hi


def resolve_profile(batch: Any, info: OnnxInfo) -> tuple[int, int, int]:
    """The batch profile for this ONNX: a static batch B allows only B:B:B; a dynamic batch takes
    ``batch`` (default 1:4:16)."""
    if info.batch is not None:
        if batch is None:
            return info.batch, info.batch, info.batch
        profile = parse_batch(batch)
        if profile != (info.batch,) * 3:
            raise ValueError(
                f"{info.path} has a static batch of {info.batch}, so the profile must be "
                f"{info.batch}:{info.batch}:{info.batch}, not {':'.join(map(str, profile))}; export with "
                "--dynamic-batch for a batch range"
            )
        return profile
    return parse_batch(DEFAULT_DYNAMIC_BATCH if batch is None else batch)


def _make_logger(trt: Any) -> Any:
    """A TensorRT ILogger that keeps warnings and errors (for error messages) and forwards to logging."""

    class Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []
            self.warnings: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            sev = trt.ILogger.Severity
            if severity in (sev.INTERNAL_ERROR, sev.ERROR):
                self.errors.append(msg)  # raised in one error by the builder, not printed twice
                log.debug("TensorRT error: %s", msg)
            elif severity == sev.WARNING:
                self.warnings.append(msg)
                log.warning("TensorRT: %s", msg)
            else:
                log.debug("TensorRT: %s", msg)

    return Logger()


def _parser_errors(parser: Any) -> list[str]:
    out = []
    for i in range(parser.num_errors):
        err = parser.get_error(i)
        where = []
        try:
            if err.node() >= 0:
                where.append(f"node {err.node()}")
            if err.node_name():
                where.append(repr(err.node_name()))
            if err.node_operator():
                where.append(f"({err.node_operator()})")
        except AttributeError:
            pass
        desc = err.desc() if hasattr(err, "desc") else str(err)
        out.append(f"{' '.join(where)}: {desc}" if where else desc)
    return out


def _dtype_name(trt: Any, dtype: Any) -> str:
    try:
        import numpy as np

        return np.dtype(trt.nptype(dtype)).name
    except (TypeError, KeyError, AttributeError):
        return str(dtype).split(".")[-1].lower()


def _tensors(network: Any, trt: Any, count: int, getter: str) -> list[dict[str, Any]]:
    tensors = []
    for i in range(count):
        t = getattr(network, getter)(i)
        tensors.append(
            {"name": t.name, "shape": [int(d) for d in t.shape], "dtype": _dtype_name(trt, t.dtype)}
        )
    return tensors


def parser_onnx_bytes(info: OnnxInfo, fl: Flavour, fp16: bool) -> tuple[bytes, list[str]]:
    """The ONNX the parser reads: converted to FP16 first where this flavour is strongly typed (also what
    ``engine.verify`` evaluates when the engine cannot run here); a QDQ INT8 model rewritten for TensorRT's explicit
    quantization (``engine.qdq_tensorrt``; its float layers stay FP32 on a strongly typed flavour)."""
    if info.facts is not None and info.facts.precision == "int8":
        from y9deploy.engine.qdq_tensorrt import tensorrt_qdq

        rewritten, notes = tensorrt_qdq(info.model)
        return rewritten.SerializeToString(), notes
    if fp16 and fl.fp16_by_onnx_conversion and not info.half:
        from y9deploy.onnx_fp16 import convert_to_fp16

        converted = convert_to_fp16(info.model, keep_io_types=True, source=str(info.path))
        note = f"converted {info.path.name} to FP16 (float32 inputs/outputs kept) for the strongly typed {fl.display}"
        return converted.SerializeToString(), [note]
    return info.path.read_bytes(), []


def build_engine_report(
    onnx_path: str | os.PathLike,
    engine_path: str | os.PathLike | None = None,
    *,
    fp16: bool = True,
    batch: Any = None,
    workspace_gb: float = 4,
    target: str | None = None,
    timing_cache: str | os.PathLike | None = None,
    flavour: str | None = None,
    int8: bool = False,
    progress: Any = None,
) -> BuildResult:
    """Build ``engine_path`` (default: the ONNX path with ``.engine``) and its manifest; see
    :func:`build_engine`. ``flavour`` picks ``"tensorrt"``/``"tensorrt_rtx"`` (None: the installed one; with
    both, ``tensorrt`` unless ``target`` asks for an ahead-of-time build); ``progress`` gets the build phases
    (:class:`y9deploy.engine.progress.BuildProgress`)."""
    from y9core.version import __version__
    from y9deploy.engine.gpu import current_compute_capability

    onnx_path = Path(onnx_path)
    if not workspace_gb > 0:
        raise ValueError(f"workspace {workspace_gb} GB is not positive; expected e.g. 4")
    target = normalize_cc(target)
    info = inspect_onnx(onnx_path, check_detector=False)
    fl = load_flavour(flavour, prefer_aot=target is not None)
    if info.end2end and not fl.builds_nms:
        raise ModelFileError(fl.refuse_nms_reason(onnx_path))
    info.facts = detector_facts(info)  # a y9 detector, its facts agreeing with its graph
    quantized = info.facts.precision == "int8"
    if int8 and not quantized:
        raise ValueError(
            f"{onnx_path} is not a QDQ INT8 model ({info.facts.precision}); make one from calibration images with "
            "`y9 export MODEL --int8 --calib data.yaml` and build the engine from it (the INT8 precision comes from "
            "its Q/DQ nodes)"
        )
    precision = "int8" if quantized else "fp16" if (fp16 or info.half) else "fp32"
    profile = resolve_profile(batch, info)
    local_cc = current_compute_capability()
    cc = fl.check_target(target, local_cc)
    engine_path = Path(engine_path) if engine_path is not None else onnx_path.with_suffix(".engine")
    if engine_path.resolve() == onnx_path.resolve():
        raise ValueError(f"engine path {engine_path} is the ONNX file itself; choose another output path")
    ensure_writable(engine_path)  # before the build, which can take minutes

    trt = fl.trt
    logger = _make_logger(trt)
    data, notes = parser_onnx_bytes(info, fl, fp16)
    builder = trt.Builder(logger)
    network = builder.create_network(fl.network_flags())
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(data, str(onnx_path)):
        errors = _parser_errors(parser) or logger.errors or ["no error message"]
        what = f"{onnx_path} (converted to FP16)" if notes else str(onnx_path)
        raise ModelFileError(
            f"{fl.display} could not parse {what} ({len(errors)} error(s)): " + "; ".join(errors)
        )

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_gb * (1 << 30)))
    fl.apply_precision(config, fp16, quantized)
    aot = fl.apply_target(config, cc, local_cc)
    h, w = info.imgsz
    opt_profile = builder.create_optimization_profile()
    shapes = {k: [n, 3, h, w] for k, n in zip(("min", "opt", "max"), profile)}
    opt_profile.set_shape(INPUT_NAME, shapes["min"], shapes["opt"], shapes["max"])
    config.add_optimization_profile(opt_profile)
    monitor = fl.make_progress_monitor(progress)
    if monitor is not None:
        config.progress_monitor = monitor

    cache_path = Path(timing_cache) if timing_cache is not None else None
    if cache_path is not None and not fl.supports_timing_cache:
        notes.append(fl.timing_cache_note())
        cache_path = None
    if cache_path is not None:
        blob = cache_path.read_bytes() if cache_path.is_file() else b""
        cache = config.create_timing_cache(blob)
        if not config.set_timing_cache(cache, ignore_mismatch=False):
            notes.append(f"timing cache {cache_path} was made by another TensorRT or GPU and was not used")
        elif blob:
            notes.append(f"reused timing cache {cache_path} ({len(blob)} bytes)")

    t0 = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    seconds = time.perf_counter() - t0
    if serialized is None:
        errors = logger.errors or ["no error message"]
        raise Y9Error(
            f"{fl.display} could not build an engine from {onnx_path} for {cc}: " + "; ".join(errors)
        )

    atomic_write(engine_path, memoryview(serialized))
    if cache_path is not None:
        atomic_write(cache_path, memoryview(config.get_timing_cache().serialize()))
        notes.append(f"saved timing cache {cache_path}")

    manifest = EngineManifest(
        engine_file=engine_path.name,
        engine_bytes=engine_path.stat().st_size,
        engine_sha256=file_sha256(engine_path),
        flavour=fl.name,
        trt_version=fl.version,
        compute_capability=cc,
        ahead_of_time=aot,
        onnx_file=onnx_path.name,
        onnx_sha256=file_sha256(onnx_path),
        precision=precision,
        inputs=_tensors(network, trt, network.num_inputs, "get_input"),
        outputs=_tensors(network, trt, network.num_outputs, "get_output"),
        profile={INPUT_NAME: shapes},
        batch=list(profile),
        imgsz=[h, w],
        end2end=info.end2end,
        onnx_metadata=dict(info.metadata),
        facts=info.facts.replace(precision=precision).to_dict(),
        y9_version=__version__,
        built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        build_seconds=round(seconds, 3),
        workspace_gb=float(workspace_gb),
        notes=list(notes),
    )
    man_path = write_manifest(engine_path, manifest)
    twin = trtexec_command(onnx_path, engine_path, profile=None if info.batch is not None else shapes, fp16=fp16,
                           onnx_is_fp16=info.half, workspace_gb=workspace_gb)  # fmt: skip
    return BuildResult(engine_path, man_path, manifest, seconds, notes, twin)


def build_engine(
    onnx_path: str | os.PathLike,
    engine_path: str | os.PathLike | None = None,
    *,
    fp16: bool = True,
    batch: Any = None,
    workspace_gb: float = 4,
    target: str | None = None,
    timing_cache: str | os.PathLike | None = None,
    flavour: str | None = None,
    int8: bool = False,
) -> Path:
    """Build a TensorRT engine from a y9 ONNX export and write ``<engine>.json`` beside it; returns the path.

    ``batch``: ``(min, opt, max)`` or ``"1:4:16"`` (a static-batch ONNX allows only its own batch; default
    for a dynamic batch 1:4:16). ``fp16``: an FP16 engine (builder flag on TensorRT; FP16 ONNX conversion on
    the strongly typed TensorRT-RTX). ``int8``: require a QDQ INT8 ONNX (``y9 export --int8``; such a file builds an
    INT8 engine with or without it: explicit quantization). ``target`` (e.g. ``"sm89"``): build ahead of time for that GPU where the
    flavour can (TensorRT-RTX); the full TensorRT builds for its own GPU only. ``timing_cache``: a file read
    before and written after the build (TensorRT; TensorRT-RTX ignores timing caches).
    """
    return build_engine_report(
        onnx_path,
        engine_path,
        fp16=fp16,
        batch=batch,
        workspace_gb=workspace_gb,
        target=target,
        timing_cache=timing_cache,
        flavour=flavour,
        int8=int8,
    ).engine_path
