"""``y9 export``: checkpoint -> ONNX (thin: parse, call export_onnx_report, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import command_line, on_interrupt


def _kept(output: Path, before: int | None) -> str:
    """What an interrupted export kept: the ONNX file is written last, whole or not at all."""
    if output.exists() and output.stat().st_mtime_ns != before:
        return f"kept {output}, written whole (the export had finished)"
    return f"nothing was written ({output} is written last, whole or not at all)"


def default_output(source: Path) -> Path:
    """``best.pt`` -> ``best.onnx``; ``model.onnx`` (converted to FP16) -> ``model-fp16.onnx``."""
    if source.suffix.lower() == ".onnx":
        return source.with_name(f"{source.stem}-fp16.onnx")
    return source.with_suffix(".onnx")


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export_cmd(
        source: Annotated[
            Path,
            typer.Argument(
                help="Checkpoint: y9 or official YOLOv9 format (.pt); or a y9 ONNX model to convert to FP16 (--half)."
            ),
        ],
        output: Annotated[
            Path | None,
            typer.Option(
                "-o", "--output", help="ONNX file (default: checkpoint path with .onnx; an ONNX source: NAME-fp16.onnx)."
            ),
        ] = None,
        imgsz: Annotated[
            str | None,
            typer.Option(
                "--imgsz",
                help="Input size: 640 or H,W (e.g. 384,640); multiples of 32 (default: the size the model was "
                "trained at, from its facts).",
            ),
        ] = None,
        batch: Annotated[
            int, typer.Option("--batch", help="Batch size (the traced one with --dynamic-batch).")
        ] = 1,
        dynamic_batch: Annotated[
            bool, typer.Option("--dynamic-batch", help="Symbolic batch dimension (H and W stay fixed).")
        ] = False,
        half: Annotated[bool, typer.Option("--half", help="FP16 weights, input and output.")] = False,
        end2end: Annotated[
            bool, typer.Option("--end2end", help="NMS inside the graph (ONNX NonMaxSuppression).")
        ] = False,
        simplify: Annotated[
            bool, typer.Option("--simplify/--no-simplify", help="Simplify with onnxsim.")
        ] = True,
        opset: Annotated[int, typer.Option("--opset", help="ONNX opset.")] = 17,
        check: Annotated[
            bool,
            typer.Option("--check/--no-check", help="Fail unless onnxruntime matches torch (default on)."),
        ] = True,
        check_images: Annotated[
            list[Path] | None,
            typer.Option(
                "--check-images", help="Images or folders for the parity check (default: uniform noise)."
            ),
        ] = None,
        conf: Annotated[float, typer.Option("--conf", help="end2end: default score threshold.")] = 0.25,
        iou: Annotated[float, typer.Option("--iou", help="end2end: default IoU threshold.")] = 0.45,
        max_det: Annotated[
            int, typer.Option("--max-det", help="end2end: detections per image (output size).")
        ] = 300,
        exist_ok: Annotated[bool, typer.Option("--exist-ok", help="Replace the ONNX file if it exists.")] = False,
    ) -> None:
        """Export a checkpoint to ONNX (re-parameterized, fused, simplified, checked against torch)."""
        from y9.model_files import model_file
        from y9cli.outputs import claim_file
        from y9deploy.export.onnx_export import export_onnx_report

        output = output if output is not None else default_output(source)  # by name: here, not in the cache
        source = model_file(source)  # official weights by name: downloaded once
        with claim_file(output, inputs=[source, *(check_images or [])], exist_ok=exist_ok, what="output ONNX file"):
            before = output.stat().st_mtime_ns if output.exists() else None
            on_interrupt(lambda: _kept(output, before), lambda: f"to export again: {command_line()}")
            result = export_onnx_report(
                source,
                output,
                imgsz=imgsz,
                batch=batch,
                dynamic_batch=dynamic_batch,
                half=half,
                simplify=simplify,
                end2end=end2end,
                opset=opset,
                conf=conf,
                iou=iou,
                max_det=max_det,
                check=check,
                check_input=check_images or None,
            )
        h, w = result.imgsz
        shape = f"[{'batch' if result.dynamic_batch else result.batch}, 3, {h}, {w}]"
        extras = [x for x, on in (("fp16", result.half), ("end2end NMS", result.end2end)) if on]
        typer.echo(
            f"exported {result.model} to {result.path} (images {shape}{', ' if extras else ''}{', '.join(extras)}, "
            f"opset {result.opset}) in {sum(result.seconds.values()):.1f} s"
        )
        if result.simplified:
            typer.echo(f"simplified: {result.nodes_raw} -> {result.nodes_simplified} nodes")
        else:
            typer.echo(f"not simplified: {result.nodes_raw} nodes")
        against = "the FP32 ONNX" if source.suffix.lower() == ".onnx" else "torch"
        for parity in result.parity:
            typer.echo(f"onnxruntime vs {against}: {parity.describe()}")
        for note in result.notes:
            typer.echo(f"note: {note}")
