"""The CLI reference (docs/cli.md), generated from the typer app itself so that it cannot drift.

``python -m y9cli.reference > docs/cli.md`` writes it; ``tests/docs/test_cli_reference.py`` regenerates it
and fails when the committed file differs. Every command (sub-groups included), its help, its arguments and
options with their help, defaults, ranges and choices, as typer/click format them for ``--help`` (independent of
the terminal's width).
"""

from __future__ import annotations

import sys

import typer.main

HEADER = """# CLI reference

Generated from the typer app by `python -m y9cli.reference > docs/cli.md` (a test fails when this file
is not current). Guides: [getting started](getting-started.md), [deploy](deploy.md), [drone](drone.md),
[inspection](inspection.md), [serving](serving.md), [training](training.md).

When a `y9` command fails it prints one `error: ...` sentence and exits with status 2; `y9 --debug COMMAND ...`
(or `Y9_DEBUG=1`) shows the traceback.
"""


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _paragraphs(text: str | None) -> str:
    """A command's help: typer separates paragraphs by blank lines; kept as Markdown paragraphs."""
    if not text:
        return ""
    paras = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n".join(p for p in paras if p)


def _command_section(cmd, ctx, path: list[str], out: list[str]) -> None:
    name = " ".join(path)
    subcommands = getattr(cmd, "commands", None)
    out.append(f"\n## `{name}`\n")
    usage = cmd.get_usage(ctx).strip()
    usage = usage[len("Usage:"):].strip() if usage.startswith("Usage:") else usage
    out.append(f"```text\n{usage}\n```\n")
    helptext = _paragraphs(cmd.help)
    if helptext:
        out.append(helptext + "\n")
    rows = []
    for param in cmd.params:
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        kind = "argument" if type(param).__name__.endswith("Argument") else "option"
        rows.append(f"| `{_cell(names)}` | {kind} | {_cell(text)} |")
    if rows:
        out.append("| name | kind | help |\n|---|---|---|")
        out.extend(rows)
    if subcommands:
        out.append("\nCommands: " + ", ".join(f"`{name} {sub}`" for sub in sorted(subcommands)) + ".")
        for sub in sorted(subcommands):
            child = subcommands[sub]
            _command_section(child, type(ctx)(child, info_name=sub, parent=ctx), [*path, sub], out)


def render() -> str:
    """docs/cli.md: the whole ``y9`` command tree as Markdown."""
    from y9cli.app import app

    root = typer.main.get_command(app)
    ctx_type = root.context_class
    root_ctx = ctx_type(root, info_name="y9")
    out = [HEADER]
    out.append("Commands: " + ", ".join(f"[`y9 {n}`](#y9-{n})" for n in sorted(root.commands)) + ".\n")
    globals_ = [p.get_help_record(root_ctx) for p in root.params if not getattr(p, "hidden", False)]
    rows = [f"| `{_cell(n)}` | {_cell(t)} |" for n, t in (r for r in globals_ if r)]
    if rows:
        out.append("Global options (before the command):\n\n| name | help |\n|---|---|")
        out.extend(rows)
    for name in sorted(root.commands):
        cmd = root.commands[name]
        _command_section(cmd, ctx_type(cmd, info_name=name, parent=root_ctx), ["y9", name], out)
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
