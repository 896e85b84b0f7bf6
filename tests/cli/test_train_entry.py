"""``y9 train`` (typer, y9cli) and ``python -m y9train.run.train`` (argparse, what torchrun starts) accept the same
options and hand ``train`` the same arguments, directly and through the command line ``--devices`` forwards."""

from __future__ import annotations

import subprocess
import sys
import types
from enum import Enum
from typing import Annotated, Union, get_args, get_origin, get_type_hints

import pytest
import typer.main

from tests.conftest import REPO
from y9cli.app import app
from y9cli.train import forwarded_args, option_values, train_command
from y9train.run.args import parser, train_kwargs

ARGVS = [
    ["--data", "d.yaml"],
    ["--data", "d.yaml", "--model", "yolov9-s", "--imgsz", "320", "--epochs", "3", "--batch", "8",
     "--workers", "2", "--project", "runs/x", "--name", "a", "--exist-ok", "--seed", "7"],  # fmt: skip
    ["--data", "d.yaml", "--amp", "bf16", "--cache", "ram", "--compile", "--grad-checkpointing", "--new-head",
     "--no-val", "--sync-bn", "--hyp", "official", "lr0=0.02", "mosaic=0"],  # fmt: skip
    ["--data", "d.yaml", "--cache", "none", "--amp", "off", "--device", "cpu"],
    ["--resume", "runs/train/exp", "epochs=10", "--workers", "0"],
    ["--resume"],
]


def _train_command():
    return typer.main.get_command(app).commands["train"]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a)[:40])
def test_both_command_lines_give_train_the_same_arguments(argv):
    ctx = _train_command().make_context("train", list(argv))
    from_cli = train_kwargs(**option_values(ctx))
    assert train_kwargs(**vars(parser().parse_intermixed_args(argv))) == from_cli
    # y9 train --devices 0,1: forwarded_args without --device, torchrun's command adds --device cuda
    forwarded = vars(parser().parse_intermixed_args([*forwarded_args(ctx), "--device", "cuda"]))
    assert train_kwargs(**forwarded) == {**from_cli, "device": "cuda"}


def _kind(annotation) -> tuple[str, tuple[str, ...]]:
    """("flag" | a value type's name, choices) of a y9 train parameter's annotation."""
    base = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
    if get_origin(base) in (Union, types.UnionType):
        base = next(a for a in get_args(base) if a is not type(None))
    if isinstance(base, type) and issubclass(base, Enum):
        return "choice", tuple(e.value for e in base)
    return ("flag" if base is bool else base.__name__), ()


def test_every_option_of_y9_train_is_an_option_of_the_training_entry_point():
    hints = get_type_hints(train_command, include_extras=True)
    cli = {p.opts[0]: _kind(hints[p.name]) for p in _train_command().params
           if p.param_type_name == "option" and p.name != "devices"}  # fmt: skip
    ours = {}
    for action in parser()._actions:  # argparse has no public list of its options
        for opt in action.option_strings:
            if opt.startswith("--") and opt != "--help":
                kind = "flag" if action.nargs == 0 else "choice" if action.choices else (action.type or str).__name__
                ours[opt] = (kind, tuple(action.choices or ()))
    assert ours == cli
    assert len(cli) == 21  # every option but --devices


def test_bad_choice_and_two_resume_paths_are_one_sentence():
    with pytest.raises(ValueError, match="--amp 'fp8' is not a choice; expected one of auto, bf16, fp16, off"):
        train_kwargs(**{**vars(parser().parse_intermixed_args([])), "amp": "fp8"})
    with pytest.raises(ValueError, match="--resume takes one run folder"):
        train_kwargs(**vars(parser().parse_intermixed_args(["--resume", "a", "b"])))


def test_module_entry_point_reports_bad_input_in_one_sentence_without_the_cli(tmp_path):
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['y9train.run.train', '--data', sys.argv[1], '--model', 'gelan-t', '--device', 'cpu']\n"
        "try:\n    runpy.run_module('y9train.run.train', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "print('CODE', code, 'CLI' if any(m.startswith('y9cli') or m == 'typer' for m in sys.modules) else '-')\n"
    )
    missing = tmp_path / "missing.yaml"
    proc = subprocess.run([sys.executable, "-c", probe, str(missing)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)  # fmt: skip
    assert proc.stdout.strip().splitlines()[-1] == "CODE 2 -", proc.stdout + proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(missing) in err[0], proc.stderr
