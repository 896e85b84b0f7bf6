"""``y9 info MODEL``: architecture name, parameters, GFLOPs, classes and strides; for an ONNX file, what the
runtime reads from it (opened and checked exactly as a Detector opens it: a file that is not a y9-style
detector is refused with one sentence); for an engine, its manifest after the size and sha256 check."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def _load(model: str):
    from y9train.models import MODEL_NAMES, build_model

    if model in MODEL_NAMES or model.endswith((".yaml", ".yml")):
        return build_model(model)
    from pathlib import Path

    from y9train.checkpoint import load_checkpoint
    from y9train.models.config import unknown_model_message

    if not Path(model).exists() and not model.endswith((".pt", ".pth")):
        raise ValueError(unknown_model_message(model))
    return load_checkpoint(model)


def info(
    model: Annotated[
        str, typer.Argument(help="A model name (gelan-c, yolov9-s, ...), a .yaml config or a .pt checkpoint.")
    ],
    imgsz: Annotated[int, typer.Option(help="Input size for the GFLOPs count.")] = 640,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show a model's architecture summary (.onnx: inputs, outputs, metadata; .engine: manifest; both checked)."""
    from rich.console import Console
    from rich.table import Table

    if model.lower().endswith(".onnx"):
        _onnx_info(model, as_json)
        return
    if model.lower().endswith((".engine", ".trt", ".plan")):
        _engine_info(model, as_json)
        return

    from y9train.models.complexity import model_info

    summary = model_info(_load(model), imgsz)
    if as_json:
        typer.echo(json.dumps(summary.to_dict()))
        return
    table = Table(title=f"y9 info {model}", show_header=False)
    names = (
        summary.names
        if len(summary.names) <= 8
        else summary.names[:8] + [f"... ({len(summary.names)} in all)"]
    )
    rows = [
        ("architecture", summary.name + (" (dual: main + auxiliary branch)" if summary.dual else "")),
        ("parameters", f"{summary.params:,}"),
        (f"GFLOPs @ {summary.imgsz[0]}x{summary.imgsz[1]}", f"{summary.gflops:.1f}"),
        ("classes", f"{summary.nc}: {', '.join(names)}"),
        ("strides", ", ".join(map(str, summary.strides))),
        ("layers", str(summary.layers)),
        ("fused", "yes" if summary.fused else "no"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)


def _onnx_info(path: str, as_json: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from y9deploy.runtime.onnxruntime_backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend(path, "cpu", threads=1)  # every load-time check of a Detector
    try:
        info = backend.info
        lo, hi = backend.batch_range
        summary = {
            **info.to_dict(),
            "input": {"name": backend.input_name, "dtype": backend.input_dtype.name, "batch": [lo, hi]},
            "outputs": {name: [str(d) for d in shape] for name, shape in backend.output_shapes.items()},
            "digest": "verified" if backend.digest_checked else "none recorded",
        }
    finally:
        backend.close()
    if as_json:
        typer.echo(json.dumps(summary))
        return
    names = info.names if len(info.names) <= 8 else info.names[:8] + [f"... ({len(info.names)} in all)"]
    table = Table(title=f"y9 info {path}", show_header=False)
    rows = [
        ("model", info.model or "(not recorded)"),
        ("input", f"{backend.input_name} [{lo if lo == hi else f'{lo}..{hi}'}, 3, {info.imgsz[0]}, {info.imgsz[1]}] "
                  f"{backend.input_dtype.name}"),
        ("outputs", "; ".join(f"{n} [{', '.join(v)}]" for n, v in summary["outputs"].items())),
        ("classes", f"{len(info.names)}: {', '.join(names)}"),
        ("strides", ", ".join(map(str, info.stride))),
        ("end-to-end NMS", "yes" if info.end2end else "no"),
        ("sha256 digest", summary["digest"]),
    ]  # fmt: skip
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)


def _engine_info(path: str, as_json: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from y9deploy.engine.manifest import check_manifest, read_manifest

    man = read_manifest(path)
    # checked against its own flavour, version and GPU: only the integrity checks (size, sha256) remain
    check_manifest(
        path, flavour=man.flavour, version=man.trt_version, compute_capability=man.compute_capability
    )
    if as_json:
        typer.echo(json.dumps(man.to_dict()))
        return
    table = Table(title=f"y9 info {path}", show_header=False)
    rows = [
        ("built with", f"{man.flavour} {man.trt_version} for {man.compute_capability}"),
        ("from", f"{man.onnx_file} (sha256 {man.onnx_sha256[:16]}...)"),
        ("precision, batch", f"{man.precision}, {':'.join(map(str, man.batch))}"),
        ("input size", f"{man.imgsz[0]}x{man.imgsz[1]}"),
        ("classes", str(len(man.names))),
        ("integrity", f"{man.engine_bytes:,} bytes, sha256 matches the manifest"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("info")(info)
