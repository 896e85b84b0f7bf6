"""The console script ``y9`` (pyproject.toml) and ``python -m y9train.run.train`` start and list their commands/options."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import import_module

import pytest

from tests.conftest import REPO


def test_the_console_script_of_pyproject_is_the_y9cli_app(capsys):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    script = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["y9"]
    module, _, name = script.partition(":")
    assert module.split(".")[0] == "y9cli"
    main = getattr(import_module(module), name)
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("export", "build-engine", "predict", "benchmark", "train", "val", "reparam", "doctor"):
        assert command in out, command


def test_the_training_module_prints_its_options():
    proc = subprocess.run([sys.executable, "-m", "y9train.run.train", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m y9train.run.train")
    for option in ("--data", "--resume", "--sync-bn", "--compile", "KEY=VALUE"):
        assert option in proc.stdout, option
    assert not re.search(r"^\s+--devices", proc.stdout, re.M)  # no such option: only y9 train starts torchrun
