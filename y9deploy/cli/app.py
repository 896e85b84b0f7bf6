"""The ``y9`` typer app. Each command module has ``register(app)``; the library does the work.

Command modules import heavy libraries (torch, onnx, tensorrt) inside their functions, so that
``y9 --help`` and runtime commands start fast on a deployment box without torch.
"""

from __future__ import annotations

import sys
from importlib import import_module

import typer

app = typer.Typer(
    name="y9",
    help="YOLOv9: export, TensorRT engines, fast inference, benchmarks and training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One line per command module under y9deploy/cli/ (each defines register(app)).
COMMAND_MODULES = [
    "info",
    "data",
    "reparam",
    "engine",
    "export",
    "predict",
    "bench",
    "doctor",
    "inspect",
    "triton",
    "train",
]


def _register_all() -> None:
    for name in COMMAND_MODULES:
        import_module(f"y9deploy.cli.{name}").register(app)


_register_all()


def main() -> None:
    """Console entry point: run the app; y9's own errors print as one sentence, exit code 2."""
    from y9deploy.errors import Y9Error

    try:
        app()
    except (Y9Error, FileNotFoundError, ValueError, TypeError) as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
