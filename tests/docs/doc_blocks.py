"""Shell commands of the guides: every ```bash block of README.md and docs/*.md, command by command.

A block can be marked as one that cannot run on a CPU-only test machine with an HTML comment on the line right
before its opening fence (invisible on GitHub, visible in the source):

    <!-- y9-docs: skip (needs a GPU) -->

The reason is required and is reported by the test; any other ``y9-docs:`` comment is an error, so a typo cannot
silently turn a block off. Lines that are only a ``#`` comment are not commands; a line ending in ``\\`` goes on
on the next line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGUAGES = {"bash", "sh", "shell"}
MARKER = re.compile(r"^<!--\s*y9-docs:\s*(.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((.+)\)$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


@dataclass(frozen=True)
class DocCommand:
    file: str  # relative to the repository
    line: int  # 1-based line of the command's first line
    text: str  # continuation lines joined, as written (trailing comments included)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class DocBlock:
    file: str
    line: int  # line of the opening fence
    commands: tuple[DocCommand, ...]
    skip: str | None = None  # the reason, when marked


@dataclass
class _Open:
    line: int
    fence: str
    language: str
    skip: str | None
    body: list[tuple[int, str]] = field(default_factory=list)


def _commands(file: str, body: list[tuple[int, str]]) -> tuple[DocCommand, ...]:
    out: list[DocCommand] = []
    pending: list[str] = []
    start = 0
    for number, raw in body:
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1].rstrip())
            continue
        pending.append(line.strip())
        out.append(DocCommand(file, start, " ".join(p.strip() for p in pending)))
        pending = []
    if pending:
        raise ValueError(f"{file}:{start}: the command ends in a line continuation (\\) at the end of its block")
    return tuple(out)


def parse_markdown(path: Path, repo: Path) -> list[DocBlock]:
    """The shell blocks of one Markdown file, in order, with their skip markers."""
    rel = path.relative_to(repo).as_posix()
    blocks: list[DocBlock] = []
    open_block: _Open | None = None
    previous = ""  # the last non-blank line outside a block
    previous_number = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if open_block is not None:
            if line.strip().startswith(open_block.fence) and not line.strip().strip(open_block.fence[0]):
                if open_block.language in SHELL_LANGUAGES:
                    blocks.append(DocBlock(rel, open_block.line, _commands(rel, open_block.body), open_block.skip))
                open_block = None
                previous, previous_number = line, number
            else:
                open_block.body.append((number, line))
            continue
        fence = FENCE.match(line)
        if fence:
            skip = None
            marker = MARKER.match(previous.strip())
            if marker and previous_number:
                found = SKIP.match(marker.group(1))
                if not found:
                    raise ValueError(
                        f"{rel}:{previous_number}: unknown y9-docs marker {marker.group(1)!r}; "
                        "expected 'skip (reason)'"
                    )
                skip = found.group(1).strip()
            open_block = _Open(number, fence.group(2), fence.group(3).lower(), skip)
            continue
        marker = MARKER.match(line.strip())
        if marker and not SKIP.match(marker.group(1)):
            raise ValueError(f"{rel}:{number}: unknown y9-docs marker {marker.group(1)!r}; expected 'skip (reason)'")
        if line.strip():
            previous, previous_number = line, number
    if open_block is not None:
        raise ValueError(f"{rel}:{open_block.line}: a code block is never closed")
    return blocks


def guide_files(repo: Path) -> list[Path]:
    """README.md and docs/*.md, in a fixed order."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def unlabelled_command_blocks(path: Path, repo: Path) -> list[str]:
    """``file:line`` of fenced blocks without a language whose lines run ``y9``: such a block is not run by the
    docs test, so a guide must label its shell blocks ``bash`` (records of other machines' runs may stay plain)."""
    rel = path.relative_to(repo).as_posix()
    out, inside, start, language, body = [], False, 0, "", []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(line)
        if not inside and fence:
            inside, start, language, body = True, number, fence.group(3), []
        elif inside and line.strip().startswith("```"):
            if not language and any(b.strip().startswith("y9 ") for b in body):
                out.append(f"{rel}:{start}")
            inside = False
        elif inside:
            body.append(line)
    return out
