"""``y9 triton MODEL --out REPO``: a Triton model repository for an ONNX model or an engine (thin: parse, call
write_triton_repo, print)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from y9cli.outputs import deprecated, writing


class InstanceKind(str, Enum):
    auto = "auto"
    gpu = "gpu"
    cpu = "cpu"


def register(app: typer.Typer) -> None:
    @app.command("triton")
    def triton_cmd(
        model: Annotated[
            Path, typer.Argument(help="ONNX model (y9 export) or TensorRT engine (with its .json).")
        ],
        output: Annotated[
            Path | None,
            typer.Option(
                "-o", "--output",
                help="Model repository folder (created if needed; other models in it are left alone); default: a "
                "new numbered folder runs/triton, runs/triton2 ...",
            ),
        ] = None,
        name: Annotated[
            str | None, typer.Option("--name", help="Model name on the server (default: file stem).")
        ] = None,
        max_batch: Annotated[
            int | None,
            typer.Option(
                "--max-batch", help="max_batch_size (default: the engine profile's max, or 8 for ONNX)."
            ),
        ] = None,
        instances: Annotated[
            int, typer.Option("--instances", min=1, help="Model instances (instance_group count).")
        ] = 1,
        kind: Annotated[
            InstanceKind,
            typer.Option("--kind", help="Where instances run: auto (GPU when present), gpu, cpu."),
        ] = InstanceKind.auto,
        exist_ok: Annotated[
            bool, typer.Option("--exist-ok", help="Replace the model folder REPO/NAME if it exists.")
        ] = False,
        out: Annotated[
            Path | None, typer.Option("--out", hidden=True, help="Deprecated: -o/--output.")
        ] = None,
        overwrite: Annotated[
            bool, typer.Option("--overwrite", hidden=True, help="Deprecated: --exist-ok.")
        ] = False,
    ) -> None:
        """Write REPO/NAME/config.pbtxt and REPO/NAME/1/model.onnx|model.plan for Triton Inference Server."""
        from y9core.files.run_dir import RunDir, resolve_output_dir
        from y9deploy.serving.triton_repo import write_triton_repo

        if out is not None:
            if output is not None:
                raise ValueError(f"--out {out} and --output {output} were both given; expected --output only.")
            deprecated("--out", "-o/--output")
            output = out
        if overwrite:
            deprecated("--overwrite", "--exist-ok")
        run = (resolve_output_dir(None, task="triton", inputs=[model]) if output is None
               else RunDir(output, created=not output.exists()))  # a repository this run creates goes if it fails
        with writing(run):
            repo = write_triton_repo(model, run.path, name=name, max_batch=max_batch, instances=instances,
                                     kind=kind.value, overwrite=exist_ok or overwrite)  # fmt: skip
        typer.echo(
            f"wrote {repo.model_dir} ({repo.platform}, max_batch_size {repo.max_batch_size}, "
            f"{repo.instances} instance{'s' if repo.instances > 1 else ''}): {repo.config_path}, {repo.model_file}"
        )
        for note in repo.notes:
            typer.echo(f"note: {note}")
        typer.echo(f"serve: tritonserver --model-repository={repo.root.resolve()}")
