"""docs/cli.md is generated from the typer app: regenerating it must give the committed file."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_cli_reference_is_current():
    committed = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    # Through the documented command line, so the `python -m` entry point is what is tested.
    fresh = subprocess.run(
        [sys.executable, "-m", "y9cli.reference"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert fresh == committed, (
        "docs/cli.md is out of date: run `python -m y9cli.reference > docs/cli.md` and commit it"
    )


def test_cli_reference_lists_every_command_and_option():
    import typer.main

    from y9cli.app import app
    from y9cli.reference import render

    text = render()
    root = typer.main.get_command(app)

    def walk(cmd, path):
        yield path, cmd
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    seen = 0
    for path, cmd in walk(root, ["y9"]):
        if len(path) > 1:
            assert f"## `{' '.join(path)}`" in text, path
        for param in cmd.params:
            if getattr(param, "hidden", False):  # deprecated old names, kept for one release: not in the reference
                assert (param.help or "").startswith("Deprecated: "), (path, param.opts)
                continue
            for opt in param.opts if not type(param).__name__.endswith("Argument") else []:
                assert f"`{opt}" in text or f" {opt}" in text, (path, opt)
                seen += 1
    assert seen > 50  # every option of every command: the tree is walked, not a fixed list
    assert "--tile" in text and "--merge" in text and "<nms\\|nmm>" in text  # choices, pipe escaped for the table
