"""``y9 inspect SOURCE --model M --rules rules.yaml``: a pass/fail verdict per image, with an audit log
(thin: parse, call run_inspection, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import command_line, on_interrupt
from y9cli.outputs import ExistOkOption, NameOption, ProjectOption, run_folder, writing
from y9core.wording import plural


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
        project: ProjectOption = None,
        name: NameOption = None,
        exist_ok: ExistOkOption = False,
        out: Annotated[
            Path | None, typer.Option("--out", "-o", hidden=True, help="Deprecated: --project DIR --name NAME.")
        ] = None,
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

        run = run_folder("inspect", project=project, name=name, exist_ok=exist_ok, legacy=out, legacy_flag="--out",
                         inputs=[source, model, rules])  # fmt: skip
        audit = f"{run.path / 'audit.csv'} and audit.jsonl"
        on_interrupt(lambda: f"kept the verdicts of the items done in {audit}",
                     lambda: f"to inspect again: {command_line()}")  # fmt: skip
        with writing(run, reuse="audit.csv and audit.jsonl are appended to (each row names its run)"):
            summary = run_inspection(source, model, rules, audit_dir=run.path, device=device, iou=iou, on_item=show)
        typer.echo(
            f"{plural(summary.items, 'item')}: {summary.passed} passed, {summary.failed} failed, {summary.errors} unreadable "
            f"(audit: {summary.audit_csv}, {summary.audit_jsonl}; run {summary.run_id})"
        )
        if fail_exit and not summary.all_passed:
            raise typer.Exit(1)
