"""The ``y9`` typer app. Each command module has ``register(app)``; the library does the work.

Command modules import heavy libraries (torch, onnx, tensorrt) inside their functions, so that
``y9 --help`` and runtime commands start fast on a deployment box without torch.
"""

from __future__ import annotations

import signal
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
    max_image_pixels: Annotated[
        int | None,
        typer.Option(
            "--max-image-pixels",
            min=1,
            help="Refuse images with more pixels than this, read from the file's header before decoding "
            "(default 178956970; also: Y9_MAX_IMAGE_PIXELS). Applies to predict, inspect, data check and train.",
        ),
    ] = None,
) -> None:
    """YOLOv9: export, TensorRT engines, fast inference, benchmarks and training."""
    if max_image_pixels is not None:  # through the environment: DataLoader workers and DDP ranks inherit it
        import os

        from y9core.images.read import MAX_PIXELS_ENV

        os.environ[MAX_PIXELS_ENV] = str(max_image_pixels)


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the command and exit with its status (``sys.exit``).

    Every error prints as one ``error: ...`` line on stderr (exit status 2), option errors included, without a
    traceback unless ``--debug`` or ``Y9_DEBUG=1`` asks for it; SIGINT / SIGTERM print one line saying what was kept
    and how to go on (exit status 130 / 143; ``y9cli.interrupts``). Called with ``argv`` (in-process), the signal
    handlers it installs are put back afterwards."""
    from y9cli import interrupts

    args = sys.argv[1:] if argv is None else list(argv)
    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS} if argv is not None else None
    from y9cli.notices import install

    install()  # a setting that differs from the model's facts: one `warning:` line
    try:
        code = run(args)
    finally:
        if saved is not None:
            for s, handler in saved.items():
                if handler is not None:
                    signal.signal(s, handler)
    if saved is None:
        interrupts.finished(code)
    sys.exit(code)


def run(args: list[str]) -> int:
    """Run ``y9 ARGS``; the exit status (the command's own, 2 for an error, 128 + N for signal N)."""
    from typer.main import get_command

    from y9cli import interrupts
    from y9cli.failure import EXIT_ERROR, debug_requested, describe, describe_usage
    from y9cli.key_values import as_options
    from y9cli.track_options import optional_tracker
    from y9core.errors import Y9Error

    interrupts.install(args)
    command = get_command(app)
    try:
        with command.make_context("y9", as_options(command, optional_tracker(args))) as ctx:
            command.invoke(ctx)
        return 0
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # click's UsageError family: option errors, or a group called bare
        if type(exc).__name__ == "NoArgsIsHelpError":  # `y9` or `y9 data` alone: the help, as asked
            typer.echo(exc.ctx.get_help())
            return 0
        typer.secho(f"error: {describe_usage(exc)}", fg=typer.colors.RED, err=True)
        return getattr(exc, "exit_code", EXIT_ERROR)
    except (Y9Error, OSError, ValueError, TypeError) as exc:
        if debug_requested(args):
            raise
        typer.secho(f"error: {describe(exc)}", fg=typer.colors.RED, err=True)
        return EXIT_ERROR
    except (KeyboardInterrupt, typer.Abort) as exc:
        if debug_requested(args):
            raise
        signum = exc.signum if isinstance(exc, interrupts.Interrupted) else signal.SIGINT
        typer.secho(interrupts.interrupted_line(signum), fg=typer.colors.YELLOW, err=True)
        return interrupts.exit_code(signum)


if __name__ == "__main__":
    main()
