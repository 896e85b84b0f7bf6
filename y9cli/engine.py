"""``y9 build-engine``: ONNX -> TensorRT engine + manifest (thin: parse, call build_engine_report, print)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class FlavourChoice(str, Enum):
    auto = "auto"
    tensorrt = "tensorrt"
    tensorrt_rtx = "tensorrt-rtx"


def register(app: typer.Typer) -> None:
    @app.command("build-engine")
    def build_engine_cmd(
        onnx: Annotated[Path, typer.Argument(help="ONNX model written by `y9 export`.")],
        output: Annotated[
            Path | None, typer.Option("-o", "--output", help="Engine file (default: ONNX path with .engine).")
        ] = None,
        fp16: Annotated[bool, typer.Option("--fp16/--fp32", help="FP16 engine (default) or FP32.")] = True,
        batch: Annotated[
            str | None,
            typer.Option(
                "--batch",
                help="Batch profile MIN:OPT:MAX (dynamic-batch ONNX; default 1:4:16) or N (static).",
            ),
        ] = None,
        workspace: Annotated[float, typer.Option("--workspace", help="Builder workspace limit in GB.")] = 4.0,
        target: Annotated[
            str | None,
            typer.Option("--target", help="Build ahead of time for this GPU, e.g. sm89 (TensorRT-RTX only)."),
        ] = None,
        timing_cache: Annotated[
            Path | None,
            typer.Option("--timing-cache", help="Timing cache file to reuse and update (TensorRT)."),
        ] = None,
        flavour: Annotated[
            FlavourChoice,
            typer.Option("--flavour", help="TensorRT package to build with when both are installed."),
        ] = FlavourChoice.auto,
        int8: Annotated[
            bool, typer.Option("--int8", help="Require a QDQ INT8 ONNX (`y9 export --int8`), which builds an INT8 engine.")
        ] = False,
        verify: Annotated[
            Path | None,
            typer.Option(
                "--verify",
                help="data.yaml: score the built engine (or, where it cannot run here, the FP16 ONNX it was built "
                "from) against the source model on its val split; fail the build if mAP50-95 drops too much.",
            ),
        ] = None,
        verify_threshold: Annotated[
            float,
            typer.Option("--verify-threshold", min=0.0, help="Largest mAP50-95 drop allowed, in points."),
        ] = 0.5,
        reference: Annotated[
            Path | None,
            typer.Option(
                "--reference", help="Source model for --verify (.pt or .onnx; default: the ONNX being built)."
            ),
        ] = None,
        verify_split: Annotated[
            str, typer.Option("--verify-split", help="data.yaml split for --verify.")
        ] = "val",
        exist_ok: Annotated[
            bool, typer.Option("--exist-ok", help="Replace the engine and its manifest if they exist.")
        ] = False,
    ) -> None:
        """Build a TensorRT engine (FP16 by default) and its manifest <engine>.json."""
        from rich.console import Console

        from y9cli.outputs import claim_file
        from y9deploy.engine.builder import build_engine_report
        from y9deploy.engine.manifest import manifest_path
        from y9deploy.engine.progress import RichBuildProgress
        from y9deploy.engine.verify import build_engine_verified

        output = output if output is not None else onnx.with_suffix(".engine")
        inputs = [p for p in (onnx, verify, reference) if p is not None]
        with claim_file(output, inputs=inputs, exist_ok=exist_ok, what="output engine"), \
                claim_file(manifest_path(output), inputs=inputs, exist_ok=exist_ok, what="engine manifest"):
            console = Console(stderr=True)
            kwargs = dict(
                fp16=fp16,
                batch=batch,
                workspace_gb=workspace,
                target=target,
                timing_cache=timing_cache,
                flavour=None if flavour is FlavourChoice.auto else flavour.value,
                int8=int8,
            )
            check = None
            if verify is None and reference is not None:
                raise ValueError(
                    f"--reference {reference} was given without --verify; expected --verify DATA.yaml too."
                )
            if verify is not None:
                kwargs = dict(kwargs, data=verify, reference=reference, threshold_points=verify_threshold)
                kwargs["split"] = verify_split
            build = build_engine_report if verify is None else build_engine_verified
            if console.is_terminal:
                with RichBuildProgress(console) as progress:
                    result = build(onnx, output, progress=progress, **kwargs)
            else:
                result = build(onnx, output, **kwargs)
        if verify is not None:
            result, check = result
        m = result.manifest
        where = f"{m.compute_capability} ahead of time" if m.ahead_of_time else m.compute_capability
        flavour_name = "TensorRT-RTX" if m.flavour == "tensorrt_rtx" else "TensorRT"
        typer.echo(
            f"built {result.engine_path} ({flavour_name} {m.trt_version}, {where}, {m.precision}, "
            f"batch {':'.join(map(str, m.batch))}, {m.imgsz[0]}x{m.imgsz[1]}, "
            f"{m.engine_bytes / 1e6:.1f} MB) in {result.seconds:.1f} s"
        )
        for note in result.notes:
            typer.echo(f"note: {note}")
        typer.echo(f"manifest: {result.manifest_path}")
        typer.echo(f"the same build with NVIDIA's trtexec (e.g. on the target device): {result.trtexec}")
        if check is not None:
            if check.reason:
                typer.echo(f"note: the engine cannot run here ({check.reason})")
            typer.echo(f"verified: {check.summary()}")
