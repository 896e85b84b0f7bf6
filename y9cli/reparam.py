"""``y9 reparam IN OUT``: drop the auxiliary branch of a yolov9 model (and optionally fuse) into a y9 checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def reparam(
    source: Annotated[Path, typer.Argument(help="A y9 or official YOLOv9 checkpoint (.pt).")],
    output: Annotated[Path, typer.Argument(help="Where to write the deployable y9 checkpoint.")],
    fuse: Annotated[
        bool, typer.Option("--fuse/--no-fuse", help="Also fold Conv+BN and merge RepConvN.")
    ] = False,
    exist_ok: Annotated[bool, typer.Option("--exist-ok", help="Replace OUTPUT if it exists.")] = False,
) -> None:
    """Re-parameterize yolov9-X into gelan-X (same outputs, no auxiliary branch)."""
    from y9.model_files import model_file
    from y9cli.outputs import claim_file
    from y9train.checkpoints.reparam_file import check_output_suffix, reparameterize_checkpoint

    check_output_suffix(output)  # before anything is downloaded or locked
    source = model_file(source)  # official weights by name (yolov9-c.pt): downloaded once
    with claim_file(output, inputs=[source], exist_ok=exist_ok, what="output checkpoint"):
        result = reparameterize_checkpoint(source, output, fuse_layers=fuse)
    typer.echo(
        f"{result.source_name} -> {result.target_name}: {result.params_before:,} -> {result.params_after:,} "
        f"parameters{' (fused)' if fuse else ''}; written to {result.path}"
    )


def register(app: typer.Typer) -> None:
    app.command("reparam")(reparam)
