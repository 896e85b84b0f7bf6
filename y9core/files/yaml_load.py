"""The one YAML loader of y9 (data.yaml, hyperparameter files, model configs, inspection rules, ``key=value``
overrides): safe (no tags run code), bounded, and saying where a mistake is.

Limits, checked before anything is built from the document:

- ``MAX_YAML_BYTES`` (2 MiB): a larger file is refused unread (the largest files y9 reads, a rules file with a
  10,000-point polygon or a data.yaml with thousands of class names, stay far below it);
- ``MAX_YAML_ALIASES`` (1,000 uses of ``*anchor``) and ``MAX_YAML_NODES`` (200,000 values once every alias is
  expanded): a "billion laughs" alias bomb (nine levels of nine aliases: 400 million values from 1 kB) is refused
  in milliseconds, before anything walks its expansion; a recursive alias is refused too.

A tag outside plain YAML's own (``!!python/object/apply:...``, ``!custom``) is refused on any value, a single scalar
as well as a list or mapping, before anything is constructed: one sentence naming the file, line, tag and value.

A syntax error says ``file:line:column`` and what the parser expected; a key repeated in a mapping (which PyYAML
would silently resolve to its last value) is a warning naming both lines. Every refusal raises the error class the
caller passes (``DataError`` for a data.yaml, ``RulesFileError`` for a rules file ...) with one sentence that names
the file; quoted text from the file is cut to a readable length (``y9core.shorten``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml

from y9core.errors import ConfigFileError, Y9Error
from y9core.shorten import quoted, shorten

MAX_YAML_BYTES = 2 << 20
MAX_YAML_ALIASES = 1_000
MAX_YAML_NODES = 200_000

_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}"
    for t in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp", "binary", "omap", "pairs", "set",
              "merge", "value")
)  # fmt: skip
# libyaml's parser when present (the same safe constructor either way)
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
log = logging.getLogger("y9")


def read_yaml_text(path: str | os.PathLike, *, what: str, error: type[Y9Error] = ConfigFileError) -> str:
    """The text of a YAML file of at most ``MAX_YAML_BYTES``; ``what`` names it in a message ("data.yaml").

    Raises:
        ``error``: too large, not UTF-8, or unreadable (one sentence naming the file).
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise error(
            f"{_subject(what, path)} cannot be read ({exc.strerror or exc}); expected a readable YAML file."
        ) from None
    if len(data) > MAX_YAML_BYTES:
        raise error(
            f"{_subject(what, path)} is larger than {MAX_YAML_BYTES:,} bytes, the most y9 reads from a YAML file; expected "
            "a configuration file (is it the right file?)."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{_subject(what, path)} is not a UTF-8 text file ({exc.reason} at byte {exc.start}); expected YAML.") \
            from None  # fmt: skip


def _subject(what: str, where: object) -> str:
    """``"data.yaml /d/data.yaml:3:5"``; just the place when ``what`` is empty (a rules file's sentences start with
    the file)."""
    return f"{what} {where}" if what else str(where)


def _where(source: str, mark: Any) -> str:
    return f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source


def _check_size(root: yaml.Node, source: str, what: str, error: type[Y9Error]) -> None:
    """Refuse a node graph with too many aliases, too many values once expanded, a recursive alias (one pass over
    the graph: an alias reaches a node already measured, whose expanded size is reused) or a tag that is not plain
    YAML."""
    size: dict[int, int] = {}  # id of a finished node -> values under it, aliases expanded
    open_ids: set[int] = set()  # nodes on the current path
    aliases = 0
    stack = [(root, _children(root), 0)]
    open_ids.add(id(root))
    _check_tag(root, source, what, error)
    if isinstance(root, yaml.MappingNode):
        _warn_repeated_keys(root, source, what)
    while stack:
        node, children, k = stack.pop()
        if k == len(children):
            open_ids.discard(id(node))
            size[id(node)] = total = 1 + sum(size[id(c)] for c in children)
            if total > MAX_YAML_NODES:
                raise error(
                    f"{_subject(what, _where(source, node.start_mark))} expands to more than {MAX_YAML_NODES:,} values "
                    "through its aliases (*name), the most y9 builds from a YAML file (an alias bomb?); expected "
                    "a configuration file."
                )
            continue
        stack.append((node, children, k + 1))
        child = children[k]
        if id(child) in open_ids:
            raise error(f"{_subject(what, _where(source, child.start_mark))} holds a recursive alias (a value that "
                        "contains itself); expected a configuration file.")  # fmt: skip
        if id(child) in size:
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                raise error(
                    f"{_subject(what, _where(source, child.start_mark))} uses more than {MAX_YAML_ALIASES:,} aliases "
                    "(*name), the most y9 accepts in a YAML file; expected a configuration file."
                )
            continue
        open_ids.add(id(child))
        _check_tag(child, source, what, error)
        stack.append((child, _children(child), 0))
        if isinstance(child, yaml.MappingNode):
            _warn_repeated_keys(child, source, what)


def _check_tag(node: yaml.Node, source: str, what: str, error: type[Y9Error]) -> None:
    """Refuse a value whose tag is not plain YAML (a ``!!python/...`` tag asks for an object to be built)."""
    if node.tag in _PLAIN_TAGS:
        return
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    if isinstance(node, yaml.ScalarNode):
        value = f"the value {quoted(node.value, 60)}"
    else:
        value = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
    raise error(
        f"{_subject(what, _where(source, node.start_mark))} tags {value} with {shorten(tag, 80)}; "
        "expected plain YAML values (strings, numbers, lists, mappings): y9 never builds objects from tags."
    )


def _warn_repeated_keys(node: yaml.MappingNode, source: str, what: str) -> None:
    """A warning for each key a mapping repeats (YAML forbids it; PyYAML keeps the last value without a word)."""
    first: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if key.value in first:
            log.warning("%s repeats the key %s (first on line %d); the later value is used",
                        _subject(what, _where(source, key.start_mark)), quoted(key.value), first[key.value])  # fmt: skip
        else:
            first[key.value] = key.start_mark.line + 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def compose_text(
    text: str, *, source: str, what: str, error: type[Y9Error] = ConfigFileError
) -> yaml.Node | None:
    """The checked node graph of a YAML document (None when it is empty); ``source`` names it ("rules.yaml").

    Raises:
        ``error``: a syntax error (``file:line:column``), more than one document, or a limit above.
    """
    loader = Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = shorten(" ".join(str(exc.problem or exc.context or "a syntax error").split()), 160)
        raise error(f"{_subject(what, _where(source, mark))} is not valid YAML: {problem}.") from None
    except yaml.YAMLError as exc:
        raise error(f"{_subject(what, source)} is not valid YAML: {shorten(str(exc), 160)}.") from None
    finally:
        loader.dispose()
    if root is not None:
        _check_size(root, source, what, error)
    return root


def construct(
    node: yaml.Node | None, *, source: str, what: str, error: type[Y9Error] = ConfigFileError
) -> Any:
    """The Python value (dicts, lists, strings, numbers, booleans, None) of a checked node graph."""
    if node is None:
        return None
    loader = Loader("")
    try:
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:  # e.g. a key that is a list
        problem = shorten(" ".join(str(exc.problem or "a value y9 cannot read").split()), 160)
        raise error(
            f"{_subject(what, _where(source, exc.problem_mark))} cannot be read: {problem}."
        ) from None
    finally:
        loader.dispose()


def load_yaml_file(path: str | os.PathLike, *, what: str, error: type[Y9Error] = ConfigFileError) -> Any:
    """Read, check and build a YAML file (module docstring); ``what`` names it in messages ("data.yaml").

    Raises:
        ``error``: one sentence naming the file (and line where there is one).
    """
    text = read_yaml_text(path, what=what, error=error)
    node = compose_text(text, source=str(path), what=what, error=error)
    return construct(node, source=str(path), what=what, error=error)


def parse_yaml_value(text: str, *, what: str, error: type[Y9Error] = ConfigFileError) -> Any:
    """A short YAML value typed on a command line (``lr0=0.01``, ``names=[a, b]``), with the same limits."""
    if len(text) > MAX_YAML_BYTES:
        raise error(
            f"{what} is {len(text):,} characters long; expected a value of at most {MAX_YAML_BYTES:,}."
        )
    node = compose_text(text, source=what, what="the value", error=error)
    return construct(node, source=what, what="the value", error=error)
