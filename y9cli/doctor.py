"""``y9 doctor``: versions, GPU, and what will and will not run here (thin: call diagnose, print)."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor_cmd(
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    ) -> None:
        """Check Python, numpy, OpenCV, torch, onnxruntime (and its providers), TensorRT, TensorRT-RTX, triton,
        tritonclient and the GPU; say what runs here."""
        from rich.console import Console
        from rich.table import Table

        from y9deploy.measure.doctor import diagnose, report_dict

        report = diagnose()
        if as_json:
            typer.echo(json.dumps(report_dict(report), indent=2))
            return
        console = Console()
        table = Table(show_header=False, box=None, pad_edge=False)
        missing = "[dim]not installed[/dim]"
        rows = [
            ("Python", f"{report.python} ({report.platform})"),
            ("numpy", report.numpy or missing),
            ("OpenCV", report.opencv or missing),
            (
                "torch",
                (
                    f"{report.torch} (CUDA {report.torch_cuda or 'none'}, "
                    f"{'sees the GPU' if report.torch_sees_gpu else 'no GPU'})"
                )
                if report.torch
                else missing,
            ),
            (
                "onnxruntime",
                (
                    f"{report.onnxruntime} [{report.onnxruntime_package}] providers: "
                    f"{', '.join(report.onnxruntime_providers)}"
                )
                if report.onnxruntime
                else missing,
            ),
            ("TensorRT", report.tensorrt or missing),
            ("TensorRT-RTX", report.tensorrt_rtx or missing),
            ("cuda-python", report.cuda_python or missing),
            (
                "triton",
                (f"{report.triton}" + ("" if report.torch_sees_gpu else " (used on GPUs only; none here)"))
                if report.triton
                else missing,
            ),
            ("tritonclient", report.tritonclient or missing),
            ("CUDA driver", report.cuda_driver or "[dim]none[/dim]"),
        ]
        for g in report.gpus:
            rows.append(
                (
                    f"GPU {g.index}",
                    f"{g.name}, {g.compute_capability}, {g.memory_gb} GB"
                    f"{', driver ' + g.driver if g.driver else ''}",
                )
            )
        if not report.gpus:
            rows.append(("GPU", "[dim]no NVIDIA GPU found[/dim]"))
        rows.append(("Pre/post-processing", f"{report.preprocess} / {report.postprocess} on {report.device}"))
        for k, v in rows:
            table.add_row(f"[bold]{k}[/bold]", v)
        console.print(table)
        console.print()
        for v in report.verdicts:
            mark = "[green]yes[/green]" if v.runs else "[red] no[/red]"
            console.print(f"{mark}  [bold]{v.backend}[/bold]: {v.reason}")
        console.print()
        console.print(report.summary)
