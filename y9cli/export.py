"""``y9 export``: checkpoint -> ONNX (thin: parse, call export_onnx_report, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import command_line, on_interrupt
from y9deploy.int8.quantize import DEFAULT_METHOD, CalibMethod
from y9deploy.int8.rule import DEFAULT_KEEP, KeepFloat


def _kept(output: Path, before: int | None) -> str:
    """What an interrupted export kept: the ONNX file is written last, whole or not at all."""
    if output.exists() and output.stat().st_mtime_ns != before:
        return f"kept {output}, written whole (the export had finished)"
    return f"nothing was written ({output} is written last, whole or not at all)"


def default_output(source: Path) -> Path:
    """``best.pt`` -> ``best.onnx``; ``model.onnx`` (converted to FP16) -> ``model-fp16.onnx``."""
    from y9deploy.export.target import default_export_path

    if source.suffix.lower() == ".onnx":
        return source.with_name(f"{source.stem}-fp16.onnx")
    return default_export_path(source)  # beside it; the embedded model's: runs/export[N]


def _export_int8(source: Path, output: Path | None, calib: Path | None, n: int, method: CalibMethod, keep: KeepFloat,
                 max_drop: float, exist_ok: bool, imgsz: str | None) -> None:  # fmt: skip
    """``y9 export MODEL --int8 --calib data.yaml``: ``y9deploy.int8.export.export_int8``, printed."""
    from y9cli.outputs import claim_file
    from y9deploy.int8.export import export_int8

    if calib is None:
        raise typer.BadParameter("--int8 needs --calib data.yaml (its train images calibrate, its val split gates).")
    output = output if output is not None else source.with_name(f"{source.stem}-int8.onnx")
    with claim_file(output, inputs=[source, calib], exist_ok=exist_ok, what="output ONNX file"):
        r = export_int8(source, output, data=calib, calib_images=n, method=method, keep=keep, max_drop=max_drop,
                        imgsz=imgsz)  # fmt: skip
    typer.echo(f"exported {r.model} to {r.path} (INT8 QDQ, {r.imgsz[0]}x{r.imgsz[1]}, {r.quantized_nodes} quantized "
               f"tensors, {r.float_nodes} head nodes in float) in {sum(r.seconds.values()):.1f} s")  # fmt: skip
    typer.echo(f"calibration: {r.calib_images} train images of {calib} ({r.method}), sha256 {r.calib_sha256[:16]}...")
    if r.gate is not None:
        typer.echo(f"accuracy gate: {r.gate.describe()}")


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
        int8: Annotated[
            bool, typer.Option("--int8", help="QDQ INT8 ONNX calibrated on --calib's train images, gated on its val.")
        ] = False,
        calib: Annotated[Path | None, typer.Option("--calib", help="--int8: data.yaml (train: calibration, val: gate).")] = None,
        calib_images: Annotated[int, typer.Option("--calib-images", help="--int8: train images to calibrate on.")] = 64,
        calib_method: Annotated[CalibMethod, typer.Option("--calib-method", help="--int8: activation ranges.")] = (
            DEFAULT_METHOD
        ),
        int8_keep: Annotated[KeepFloat, typer.Option("--int8-keep", help="--int8: nodes kept in float.")] = (
            DEFAULT_KEEP
        ),
        int8_max_drop: Annotated[
            float, typer.Option("--int8-max-drop", help="--int8: mAP50-95 points INT8 may lose against FP32.")
        ] = 1.0,
    ) -> None:
        """Export a checkpoint to ONNX (re-parameterized, fused, simplified, checked against torch)."""
        from y9.model_files import model_file
        from y9cli.outputs import claim_file
        from y9deploy.export.onnx_export import export_onnx_report
        from y9deploy.export.target import check_suffix

        if int8:
            if half or end2end:
                raise typer.BadParameter("--int8 makes a QDQ INT8 model with float input and raw output; drop --half "
                                         "and --end2end (an engine or the host runs the NMS).")  # fmt: skip
            output = check_suffix(output, "onnx") if output is not None else None  # e2.pt, x.txt refused
            return _export_int8(model_file(source), output, calib, calib_images, calib_method, int8_keep, int8_max_drop, exist_ok,
                                imgsz)  # fmt: skip
        output = output if output is not None else default_output(source)  # by name: here, not in the cache
        check_suffix(output, "onnx")  # an ONNX under another name (e2.pt, x.txt) is refused
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
