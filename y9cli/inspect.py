"""``y9 inspect SOURCE --model M --rules rules.yaml``: a pass/fail verdict per image, or per time window of a video,
stream or camera (a counting gate), with an audit log (thin: parse, call run_inspection, print)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import command_line, exit_code, graceful_stop, interrupted_line, on_interrupt
from y9cli.outputs import ExistOkOption, NameOption, ProjectOption, run_folder, writing
from y9cli.stream_options import MaxFramesOption, PolicyOption, ReconnectAttemptsOption
from y9cli.track_options import Tracker
from y9core.wording import plural


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_cmd(
        source: Annotated[
            str,
            typer.Argument(help="An image or a folder of images (recursive; one image = one item), or a video file, "
                                "stream URL or camera index (a counting gate: one item per window_s of the rules)."),
        ],  # fmt: skip
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
        track: Annotated[
            Tracker,
            typer.Option("--track", help="Videos and streams: the tracker the gate counts on: bytetrack, or botsort "
                                         "(camera-motion compensation, for a moving camera)."),
        ] = Tracker.bytetrack,  # fmt: skip
        policy: PolicyOption = None,
        reconnect_attempts: ReconnectAttemptsOption = 10,
        max_frames: MaxFramesOption = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary line.")] = False,
    ) -> None:
        """Inspect images, or the windows of a video or stream, against a rules file: ROIs, per-class thresholds,
        count rules, counting lines; one verdict per image or window."""
        from y9deploy.pipelines.inspection.run import SUMMARY_NAME, run_inspection
        from y9deploy.pipelines.sources.frame_reader import ReconnectPolicy
        from y9deploy.pipelines.sources.kinds import source_roots

        def show(v) -> None:  # an ItemVerdict, or a WindowVerdict of a video
            if quiet:
                return
            colour = {"pass": typer.colors.GREEN, "fail": typer.colors.RED}.get(
                v.verdict, typer.colors.YELLOW
            )
            line = typer.style(v.verdict.upper(), fg=colour) + f" {v.item}"
            typer.echo(line + (f": {'; '.join(v.reasons)}" if v.reasons else ""))

        from y9.model_files import model_file

        model = model_file(model)  # official weights by name (-m gelan-c.pt): downloaded once
        run = run_folder("inspect", project=project, name=name, exist_ok=exist_ok, legacy=out, legacy_flag="--out",
                         inputs=[*source_roots(source), model, rules])  # fmt: skip
        audit = f"{run.path / 'audit.csv'} and audit.jsonl"
        on_interrupt(lambda: f"kept the verdicts of the items done in {audit}",
                     lambda: f"to inspect again: {command_line()}")  # fmt: skip
        stop, stopped_by = threading.Event(), []
        with (
            writing(run, reuse=f"audit.csv and audit.jsonl are appended to (each row names its run), as is {SUMMARY_NAME}"),
            graceful_stop(stop, lambda m: typer.secho(m, fg=typer.colors.YELLOW, err=True), stopped_by),
        ):
            summary = run_inspection(
                source, model, rules, audit_dir=run.path, device=device, iou=iou, on_item=show, tracker=track.value,
                policy=policy.value if policy is not None else None, max_frames=max_frames, stop=stop,
                reconnect=ReconnectPolicy(attempts=reconnect_attempts),
                on_warning=lambda m: typer.secho(f"warning: {m}", fg=typer.colors.YELLOW, err=True),
            )  # fmt: skip
        if summary.counts:  # a video: windows, then the line totals and zone visits
            dropped = f", {summary.dropped} dropped (latest policy)" if summary.dropped else ""
            typer.echo(
                f"{plural(summary.items, 'window')} ({plural(summary.frames, 'frame')}{dropped}): {summary.passed} "
                f"passed, {summary.failed} failed, {summary.errors} without frames (audit: {summary.audit_csv}, "
                f"{summary.audit_jsonl}, {summary.audit_csv.with_name(SUMMARY_NAME)}; run {summary.run_id})"
            )
            for src, counts in summary.counts.items():
                for line in counts.sentences():
                    typer.echo(f"{src}: {line}")
        else:
            typer.echo(
                f"{plural(summary.items, 'item')}: {summary.passed} passed, {summary.failed} failed, {summary.errors} "
                f"unreadable (audit: {summary.audit_csv}, {summary.audit_jsonl}; run {summary.run_id})"
            )
        if stopped_by:
            typer.secho(interrupted_line(stopped_by[0]), fg=typer.colors.YELLOW, err=True)
            raise typer.Exit(exit_code(stopped_by[0]))
        if fail_exit and not summary.all_passed:
            raise typer.Exit(1)
