"""benchmarks/ stays a folder of scripts that produce docs/benchmarks.md's figures: every file there is named in
that page's table of scripts ("The scripts", with the command that runs it or the command it helps), the table names
no file that is gone, and the folder holds at most 5,000 lines (probes that answered their question leave it)."""

from __future__ import annotations

import re

from tests.conftest import REPO

MAX_LINES = 5000
BENCH = REPO / "benchmarks"


def _scripts() -> set[str]:
    return {p.relative_to(BENCH).as_posix() for p in BENCH.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _table() -> str:
    page = (REPO / "docs" / "benchmarks.md").read_text()
    assert "\n## The scripts\n" in page, "docs/benchmarks.md lost its section 'The scripts'"
    return page.split("\n## The scripts\n", 1)[1].split("\n## ", 1)[0]


def test_every_script_is_named_with_its_command():
    table = _table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = {m for line in rows for m in re.findall(r"`([\w/]+\.(?:py|sh))`", line)}
    commands = {m for line in rows for m in re.findall(r"benchmarks/([\w/]+\.(?:py|sh))", line)}
    scripts = _scripts()
    assert scripts - named == set(), f"files of benchmarks/ missing from docs/benchmarks.md's table: {scripts - named}"
    assert named - scripts == set(), f"the table names files benchmarks/ no longer holds: {named - scripts}"
    first = {line.split("`")[1] for line in rows}
    assert first <= commands, f"rows without a command that runs their script: {first - commands}"


def test_the_folder_holds_at_most_5000_lines():
    lines = {name: len((BENCH / name).read_text().splitlines()) for name in _scripts()}
    biggest = sorted(lines.items(), key=lambda kv: -kv[1])[:5]
    assert sum(lines.values()) <= MAX_LINES, f"benchmarks/ holds {sum(lines.values())} lines; the largest: {biggest}"
