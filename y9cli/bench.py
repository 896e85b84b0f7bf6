"""``y9 benchmark MODEL [MODEL ...]``: latency per stage and throughput (thin: parse, call, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"--batch {text!r}: expected comma-separated integers, e.g. 1,8,32"
        ) from None
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter(f"--batch {text!r}: expected positive batch sizes, e.g. 1,8,32")
    return sizes


def register(app: typer.Typer) -> None:
    @app.command("benchmark")
    def benchmark_cmd(
        models: Annotated[list[Path], typer.Argument(help="Model files (.engine, .onnx, .pt).")],
        batch: Annotated[
            str, typer.Option("--batch", help="Batch sizes, comma-separated, e.g. 1,8,32.")
        ] = "1",
        iters: Annotated[int, typer.Option("--iters", min=1, help="Timed calls per batch size.")] = 100,
        warmup: Annotated[int, typer.Option("--warmup", min=0, help="Untimed calls before timing.")] = 10,
        idle_ms: Annotated[
            float, typer.Option("--idle-ms", min=0.0, help="Sleep between calls (camera loop).")
        ] = 0.0,
        device: Annotated[
            str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: best).")
        ] = None,
        imgsz: Annotated[int | None, typer.Option("--imgsz", help="Input size for .pt checkpoints.")] = None,
        conf: Annotated[
            float, typer.Option("--conf", min=0.0, max=1.0, help="Score threshold (post cost).")
        ] = 0.25,
        frame: Annotated[str, typer.Option("--frame", help="Synthetic frame size HxW.")] = "1080x1920",
        source: Annotated[
            Path | None, typer.Option("--source", help="Benchmark on this image instead.")
        ] = None,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the results as JSON here.")
        ] = None,
        compare_to: Annotated[
            Path | None,
            typer.Option("--compare", help="An earlier --json output: print the regression table."),
        ] = None,
        stream: Annotated[
            bool,
            typer.Option(
                "--stream",
                help="Time predict_stream over consecutive batches (next batch's letterbox overlapped).",
            ),
        ] = False,
        compile_model: Annotated[
            bool,
            typer.Option("--compile", help="torch.compile a .pt model on CUDA (slow first call per batch)."),
        ] = False,
    ) -> None:
        """Benchmark models: p50/p90/p99/max of pre, infer, post and end to end, and img/s."""
        from contextlib import ExitStack

        with ExitStack() as hold:
            from rich.console import Console
            from rich.table import Table

            from y9deploy.measure.bench import BenchmarkResult, benchmark, compare

            try:
                fh, fw = (int(v) for v in frame.lower().split("x"))
            except ValueError:
                raise typer.BadParameter(f"--frame {frame!r}: expected HxW, e.g. 1080x1920") from None
            old = BenchmarkResult.load(compare_to) if compare_to is not None else None
            if json_out is not None:
                from y9cli.outputs import claim_file
                from y9core.files.atomic_write import ensure_writable

                inputs = [*models, *([compare_to] if compare_to is not None else []), *([source] if source else [])]
                # never over an input; one writer at a time (replacing an earlier JSON is the point of --json)
                hold.enter_context(claim_file(json_out, inputs=inputs, exist_ok=True, what="--json file"))
                ensure_writable(json_out)  # before the benchmark, not after it
            from y9.model_files import model_file

            models = [model_file(m) for m in models]  # official weights by name: downloaded once
            frames = None
            if source is not None:
                from y9deploy.runtime.image_file import read_image

                frames = [read_image(source)]
            console = Console()
            result = benchmark(
                list(models),
                batch_sizes=_sizes(batch),
                iters=iters,
                warmup=warmup,
                idle_ms=idle_ms,
                device=device,
                frame_hw=(fh, fw),
                frames=frames,
                imgsz=imgsz,
                conf=conf,
                stream=stream,
                progress=lambda name, b: console.print(f"[dim]benchmarking {name} batch {b} ...[/dim]"),
                **({"compile": True} if compile_model else {}),
            )
            table = Table(
                title="y9 benchmark: p50 per stage, end to end p50/p99 (ms), throughput", title_justify="left"
            )
            for i, col in enumerate(BenchmarkResult.COLUMNS):
                if i == 0:
                    table.add_column(col, overflow="fold")
                else:
                    table.add_column(col, justify="right", no_wrap=True)
            for row in result.rows():
                table.add_row(*row)
            console.print(table)
            if json_out is not None:
                result.save(json_out)
                console.print(f"wrote {json_out}")
            if old is not None:
                rows = compare(result, old)
                reg = Table(title=f"compared with {compare_to}")
                for col in ("model", "batch", "metric", "old", "new", "change"):
                    reg.add_column(col, justify="left" if col in ("model", "metric") else "right")
                for r in rows:
                    style = "red" if r.regression else ("green" if r.notable else "")
                    reg.add_row(
                        r.model,
                        str(r.batch),
                        r.metric,
                        f"{r.old:.2f}",
                        f"{r.new:.2f}",
                        f"[{style}]{r.change:+.1%}[/{style}]" if style else f"{r.change:+.1%}",
                    )
                none = "no case in common with the earlier JSON (same model file name, batch and mode: predict or --stream)."
                console.print(reg if rows else none)
