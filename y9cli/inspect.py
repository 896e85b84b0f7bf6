"""``y9 inspect SOURCE --model M --rules rules.yaml``: a pass/fail verdict per image, with an audit log
(thin: parse, call run_inspection, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_cmd(
        source: Annotated[
            Path, typer.Argument(help="An image, or a folder of images (recursive); one image = one item.")
        ],
        model: Annotated[Path, typer.Option("--model", "-m", help="Model file: .engine, .onnx or .pt.")],
        rules: Annotated[
            Path, typer.Option("--rules", "-r", help="Rules file (YAML; see docs/inspection.md).")
        ],
        out: Annotated[
            Path,
            typer.Option("--out", "-o", help="Folder of the audit log (audit.csv, audit.jsonl; appended)."),
        ] = Path("runs/inspect"),
        fail_exit: Annotated[
            bool,
            typer.Option("--fail-exit", help="Exit with status 1 when any item fails or cannot be read."),
        ] = False,
        device: Annotated[
            str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: best).")
        ] = None,
        iou: Annotated[float, typer.Option("--iou", min=0.0, max=1.0, help="NMS IoU threshold.")] = 0.45,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary line.")] = False,
    ) -> None:
        """Inspect images against a rules file: ROIs, per-class thresholds, count rules; one verdict per image."""
        from y9deploy.pipelines.inspection_run import ItemVerdict, run_inspection

        def show(v: ItemVerdict) -> None:
            if quiet:
                return
            colour = {"pass": typer.colors.GREEN, "fail": typer.colors.RED}.get(
                v.verdict, typer.colors.YELLOW
            )
            line = typer.style(v.verdict.upper(), fg=colour) + f" {v.item}"
            typer.echo(line + (f": {'; '.join(v.reasons)}" if v.reasons else ""))

        summary = run_inspection(source, model, rules, audit_dir=out, device=device, iou=iou, on_item=show)
        typer.echo(
            f"{summary.items} items: {summary.passed} passed, {summary.failed} failed, {summary.errors} unreadable "
            f"(audit: {summary.audit_csv}, {summary.audit_jsonl}; run {summary.run_id})"
        )
        if fail_exit and not summary.all_passed:
            raise typer.Exit(1)
