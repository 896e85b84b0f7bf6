"""The ``y9`` typer app. Each command module has ``register(app)``; the library does the work.

Command modules import heavy libraries (torch, onnx, tensorrt) inside their functions, so that
``y9 --help`` and runtime commands start fast on a deployment box without torch.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Annotated

import typer

app = typer.Typer(
    name="y9",
    help="YOLOv9: export, TensorRT engines, fast inference, benchmarks and training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One line per command module under y9cli/ (each defines register(app)).
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
        import_module(f"y9cli.{name}").register(app)


@app.callback()
def _global_options(
    debug: Annotated[
        bool, typer.Option("--debug", help="On an error, show the full Python traceback (also: Y9_DEBUG=1).")
    ] = False,
) -> None:
    """YOLOv9: export, TensorRT engines, fast inference, benchmarks and training."""


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app. y9's own errors and every OSError print as one sentence on stderr
    (exit code 2; Ctrl-C: 130), without a traceback unless ``--debug`` or ``Y9_DEBUG=1`` asks for it."""
    from y9cli.failure import EXIT_ERROR, EXIT_INTERRUPTED, debug_requested, describe
    from y9core.errors import Y9Error

    args = sys.argv[1:] if argv is None else list(argv)
    from y9cli.notices import install

    install()  # a setting that differs from the model's facts: one `warning:` line
    try:
        app(args=args, prog_name="y9")
    except (Y9Error, OSError, ValueError, TypeError) as exc:
        if debug_requested(args):
            raise
        typer.secho(f"error: {describe(exc)}", fg=typer.colors.RED, err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        if debug_requested(args):
            raise
        typer.secho("error: interrupted (Ctrl-C); nothing more was written.", fg=typer.colors.RED, err=True)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
