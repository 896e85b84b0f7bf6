"""The ``y9 train`` options spelled out in the command line module (which must not import the trainer package: ``y9
val`` of a deployed file loads it too) agree with the library: the choices with ``y9train.run.args``' tuples, the
defaults its help names with ``TrainConfig``'s."""

from __future__ import annotations

import re

from y9cli.data import CacheMode
from y9cli.train import Amp, Cache
from y9train.optimisation.hyp import TrainConfig
from y9train.run.args import AMP_CHOICES, CACHE_CHOICES


def test_the_choices_are_the_trainers():
    assert [e.value for e in Amp] == list(AMP_CHOICES)
    assert [e.value for e in Cache] == list(CACHE_CHOICES) == [e.value for e in CacheMode]


def test_the_defaults_the_help_names_are_the_trainers():
    import typer.main

    from y9cli.app import app

    command = typer.main.get_command(app).commands["train"]
    helps = {p.name: getattr(p, "help", None) or "" for p in command.params}
    defaults = TrainConfig()
    for name in ("epochs", "batch", "workers"):
        assert re.search(rf"\(default {getattr(defaults, name)}\b", helps[name]), (name, helps[name])
    assert "(default none)" in helps["cache"] and defaults.cache is None
    assert "else 640" in helps["imgsz"] and defaults.imgsz is None  # None: decided by the trainer (640 or the checkpoint's)
    assert "(default runs/train)" in helps["project"] and defaults.project == "runs/train"
