"""The output options every writing command shares, and the one rule behind them (``y9core.files.run_dir``).

Commands that write a folder of results (predict, inspect, val, train) take ``--project DIR`` and ``--name NAME`` as
the YOLO family's tools do:

- neither: a new numbered run folder, ``runs/predict``, ``runs/predict2`` ... (train: ``runs/train/exp``, ``exp2``);
- ``--project DIR`` alone: a new numbered folder under DIR;
- ``--name NAME``: exactly PROJECT/NAME; refused when it holds results of an earlier run, unless ``--exist-ok``
  (then the command says what the folder held and what happens to it: logs are appended to, never replaced).

Commands that write one file (export, build-engine, reparam) or one model folder (triton) take ``-o/--output`` and
refuse an output that is one of their inputs, or that exists unless ``--exist-ok``; each holds its file for the whole
command (``claim_file``, i.e. ``y9core.files.output_file``): a second writer of the same file refuses in one sentence.

The old names ``--save-dir`` (predict) and ``--out`` (inspect, triton), and triton's ``--overwrite``, still work for
this release as hidden aliases and print a deprecation note.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Annotated

import typer

from y9core.files.run_dir import RunDir, RunLock, resolve_output_dir

ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project", help="Parent folder of the run folder (default: runs, or runs/train for training)."
    ),
]
NameOption = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="Run folder name under --project (default: a new numbered folder, e.g. runs/predict2); a named folder "
        "that holds results is refused unless --exist-ok.",
    ),
]
ExistOkOption = Annotated[
    bool,
    typer.Option(
        "--exist-ok",
        help="Write into an output that exists: a run folder's logs are appended to (never replaced); a single "
        "output file is replaced.",
    ),
]


def warn(message: str) -> None:
    typer.secho(f"warning: {message}", err=True, fg=typer.colors.YELLOW)


def claim_file(
    path: Path, *, inputs: Iterable[str | Path] = (), exist_ok: bool = False, what: str = "output"
) -> AbstractContextManager[Path]:
    """Hold one output file for this command (``y9core.files.output_file.claim_output_file``): ``with claim_file(...):``."""
    from y9core.files.output_file import claim_output_file

    return claim_output_file(path, inputs=inputs, exist_ok=exist_ok, what=what, warn=warn)


def note(message: str) -> None:
    typer.secho(f"note: {message}", err=True, fg=typer.colors.YELLOW)


def deprecated(old: str, new: str) -> None:
    """The deprecation note of an old option name (kept as a hidden alias for one release)."""
    note(f"{old} is deprecated and will be removed in the next release; use {new}.")


def run_folder(
    task: str,
    *,
    project: Path | None,
    name: str | None,
    exist_ok: bool,
    inputs: Iterable[str | Path] = (),
    legacy: Path | None = None,
    legacy_flag: str = "--save-dir",
    default_project: str | Path = "runs",
    default_name: str | None = None,
) -> RunDir:
    """The run folder of a command from its ``--project/--name/--exist-ok`` (or a deprecated folder option).

    Raises:
        OutputError: the folder is refused (``y9core.files.run_dir.resolve_output_dir``); ValueError: both the old and
        the new options were given.
    """
    if legacy is not None:
        if name is not None or project is not None:
            raise ValueError(
                f"{legacy_flag} {legacy} and --project/--name were both given; expected one of them "
                f"({legacy_flag} is the deprecated name of --project DIR --name NAME)."
            )
        deprecated(legacy_flag, f"--project {legacy.parent} --name {legacy.name}")
        explicit, option = legacy, legacy_flag
    elif name is not None:
        explicit, option = Path(project if project is not None else default_project) / name, "--name"
    else:
        explicit, option = None, "--name"
    return resolve_output_dir(
        explicit,
        task=default_name or task,
        exist_ok=exist_ok,
        inputs=list(inputs),
        project=project if project is not None else default_project,
        option=option,
    )


@contextmanager
def writing(run: RunDir, *, reuse: str | None = None) -> Iterator[RunLock]:
    """Hold ``run``'s folder for this process (``RunLock``) while the command writes; print ``run.reuse_note``
    (``reuse`` says what happens to the earlier files). A folder this run created that is still empty when the
    command fails (before writing anything: a bad model, rules file or camera) is removed: nothing is left behind."""
    lock = RunLock(run.path, warn=warn)
    lock.acquire()
    try:
        if reuse is not None and (line := run.reuse_note(reuse)) is not None:
            note(line)
        yield lock
    except BaseException:
        lock.release()
        run.remove_if_unused()
        raise
    else:
        lock.release()
