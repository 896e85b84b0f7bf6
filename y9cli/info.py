"""``y9 info MODEL``: the model's facts (``y9deploy.facts.inspect_facts``: trained size, classes, strides, letterbox,
input, recipe, source) for a ``.pt``, an ONNX model, an engine, a Triton model folder or a ``.facts.json`` sidecar,
with what was checked and what is only claimed; for a ``.pt`` or a model name also the architecture (parameters,
GFLOPs, layers). An ONNX file is opened and checked exactly as a Detector opens it; an engine's manifest after the
size and sha256 check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

ARTIFACT_SUFFIXES = (".pt", ".pth", ".onnx", ".engine", ".trt", ".plan", ".json")


def _architecture(model: str, imgsz: int | None, facts: Any) -> Any:
    from y9train.models import MODEL_NAMES, build_model
    from y9train.models.complexity import model_info

    if model in MODEL_NAMES or model.endswith((".yaml", ".yml")):
        return model_info(build_model(model), imgsz or 640)
    from y9train.checkpoint import load_checkpoint

    return model_info(load_checkpoint(model), imgsz or max(facts.imgsz))


def _shorten(names: tuple[str, ...] | list[str], k: int = 8) -> str:
    shown = list(names[:k]) + ([f"... ({len(names)} in all)"] if len(names) > k else [])
    return f"{len(names)}: {', '.join(shown)}"


def fact_rows(facts: Any) -> list[tuple[str, str]]:
    """The facts as (label, value) rows, the same for every artifact."""
    lb = facts.letterbox
    color = lb.color[0] if len(set(lb.color)) == 1 else list(lb.color)
    return [
        ("model", facts.model or "(not recorded)"),
        ("trained size", f"{facts.imgsz[0]}x{facts.imgsz[1]}"),
        ("classes", _shorten(facts.names)),
        ("strides", ", ".join(map(str, facts.strides))),
        ("letterbox", f"auto {str(lb.auto).lower()}, scaleup {str(lb.scaleup).lower()}, stride {lb.stride}, "
                      f"colour {color}"),
        ("input", f"{facts.layout} {facts.channels} x {facts.normalization}, {facts.precision}"),
        ("end-to-end NMS", "yes" if facts.end2end else "no"),
        ("recipe", facts.recipe or "(not recorded)"),
        ("source sha256", (facts.source_sha256[:16] + "...") if facts.source_sha256 else "(not recorded)"),
        ("y9 version", facts.y9_version or "(not recorded)"),
    ]  # fmt: skip


def _detail_rows(report: Any) -> list[tuple[str, str]]:
    d = report.details
    if report.kind == "onnx":
        inp = d["input"]
        outs = "; ".join(f"{n} [{', '.join(v)}]" for n, v in d["outputs"].items())
        return [("file input", f"{inp['name']} {inp['shape']} {inp['dtype']}"), ("file outputs", outs)]
    if report.kind == "engine" and d.get("flavour"):
        where = f"{d['compute_capability']}{' ahead of time' if d['ahead_of_time'] else ''}"
        return [("built with", f"{d['flavour']} {d['trt_version']} for {where} from {d['onnx_file']}"),
                ("precision, batch", f"{d['precision']}, {':'.join(map(str, d['batch']))}"),
                ("file input", f"{d['input_size'][0]}x{d['input_size'][1]}")]  # fmt: skip
    return []


def info(
    model: Annotated[
        str,
        typer.Argument(
            help="A model name (gelan-c, yolov9-s, ...), a .yaml config, a .pt checkpoint, an .onnx model, an engine "
            "(.engine/.trt/.plan), a Triton model folder (y9 triton) or a .facts.json sidecar."
        ),
    ],
    imgsz: Annotated[
        int | None, typer.Option(help="Input size for the GFLOPs count (default: the trained size, else 640).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show a model's facts (what it was trained at, its classes, how it is fed), checked vs claimed."""
    from rich.console import Console
    from rich.table import Table

    from y9.model_files import model_file

    model = str(model_file(model)) if model.lower().endswith(".pt") else model  # official weights by name
    report = None
    if model.lower().endswith(ARTIFACT_SUFFIXES) or Path(model).is_dir():
        from y9deploy.facts import inspect_facts

        report = inspect_facts(model)
    summary = None
    if report is None or report.kind == "checkpoint":
        summary = _architecture(model, imgsz, report.facts if report else None)
    if as_json:
        out = report.to_dict() if report else {}
        if summary is not None:
            out["architecture"] = summary.to_dict()
        typer.echo(json.dumps(out))
        return
    table = Table(title=f"y9 info {model}", show_header=False)
    rows: list[tuple[str, str]] = []
    if summary is not None:
        rows += [
            ("architecture", summary.name + (" (dual: main + auxiliary branch)" if summary.dual else "")),
            ("parameters", f"{summary.params:,}"),
            (f"GFLOPs @ {summary.imgsz[0]}x{summary.imgsz[1]}", f"{summary.gflops:.1f}"),
            ("layers", f"{summary.layers}, {'fused' if summary.fused else 'not fused'}"),
        ]
    if report is not None:
        rows += fact_rows(report.facts) + _detail_rows(report)
        rows += [("checked", line) for line in report.checked]
        rows += [("claimed (not checkable here)", line) for line in report.claimed]
    elif summary is not None:
        rows += [("classes", _shorten(summary.names)), ("strides", ", ".join(map(str, summary.strides)))]
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("info")(info)
