"""The inspection rules file (YAML; the schema is documented in docs/inspection.md).

    version: 1
    thresholds:
      default: {min_conf: 0.3}
      scratch: {min_conf: 0.5, min_area: 20}
    regions:
      left:   {rect: [0, 20, 30, 64]}
      corner: {polygon: [[32, 20], [64, 20], [64, 64]]}
    rules:
      - {name: no scratch on the left, region: left, classes: [scratch], max: 0}
      - {name: one screw in the corner, region: corner, classes: [screw], min: 1, max: 1}

Videos and streams (a counting gate, ``gate``) add named counting ``lines:`` (``gate: [x1, y1, x2, y2]``),
rules on a line (``{name: ..., line: gate, direction: in, max: 30}``: crossings per window) and ``window_s`` (the
seconds of one verdict, default 60).

``load_rules(path)`` validates the whole file and raises one ``RulesFileError`` listing every mistake, one
sentence each, prefixed with ``file:line`` (PyYAML's node marks). The file is read by ``y9core.files.yaml_load`` (its size
and alias limits); a polygon has at most ``MAX_POLYGON_POINTS`` points. Class names are checked against the model
by ``RuleSet.bind(names)`` (``ruleset``), with the same ``file:line`` sentences.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from y9core.errors import RulesFileError
from y9core.files.yaml_load import compose_text, read_yaml_text
from y9core.shorten import quoted
from y9deploy.pipelines.inspection.frame_rules import ClassThreshold
from y9deploy.pipelines.inspection.ruleset import DEFAULT_WINDOW_S, ClassRef, RuleSet, RuleSpec
from y9deploy.tracking.counting import CountLine
from y9deploy.tracking.regions import MAX_COORD, MAX_POLYGON_POINTS, Region

TOP_KEYS = ("version", "window_s", "thresholds", "regions", "lines", "rules")
THRESHOLD_KEYS = ("min_conf", "min_area", "min_width", "min_height")
REGION_KEYS = ("rect", "polygon")
RULE_KEYS = ("name", "region", "line", "direction", "classes", "min", "max", "overlap")
DIRECTIONS = ("in", "out")  # of a line crossing (counting.py); a rule without direction counts both
# the Detector's own default score threshold: what counts when the file sets no min_conf
DEFAULT_THRESHOLD = ClassThreshold(min_conf=0.25)


class _Checker:
    """Walks PyYAML nodes, converting values and collecting one sentence per mistake."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []
        self._loader = yaml.SafeLoader("")

    def at(self, node: yaml.Node) -> str:
        return f"{self.path}:{node.start_mark.line + 1}"

    def error(self, node: yaml.Node, sentence: str) -> None:
        self.errors.append(f"{self.at(node)}: {sentence}")

    def value(self, node: yaml.Node) -> Any:
        return self._loader.construct_object(node, deep=True)

    def mapping(self, node: yaml.Node, what: str, allowed: tuple[str, ...] | None) -> dict[str, tuple]:
        """A mapping node -> {key: (key_node, value_node)}; unknown or repeated keys are mistakes."""
        if not isinstance(node, yaml.MappingNode):
            self.error(node, f"{what} is {self.describe(node)}; expected a mapping (key: value lines).")
            return {}
        out: dict[str, tuple] = {}
        for knode, vnode in node.value:
            key = self.value(knode) if isinstance(knode, yaml.ScalarNode) else None
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                self.error(knode, f"{what} has the key {self.describe(knode)}; expected a name.")
                continue
            key = str(key) if allowed is not None else key
            if key in out:
                self.error(knode, f"{what} repeats the key {key!r}; each key may appear once.")
                continue
            if allowed is not None and key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.error(knode, f"{what} has the unknown key {key!r}{hint}; expected {', '.join(allowed)}.")
                continue
            out[key] = (knode, vnode)
        return out

    def describe(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        v = self.value(node)
        return "empty" if v is None else repr(v)

    def number(
        self, node: yaml.Node, what: str, lo: float | None, hi: float | None, integer: bool = False
    ) -> Any:
        v = self.value(node) if isinstance(node, yaml.ScalarNode) else None
        ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
        kind = "an integer" if integer else "a number"
        rng = "" if lo is None else f" >= {lo:g}" if hi is None else f" in [{lo:g}, {hi:g}]"
        bad = isinstance(v, bool) or not ok_type or v != v
        if bad or (lo is not None and v < lo) or (hi is not None and v > hi):
            self.error(node, f"{what} is {self.describe(node)}; expected {kind}{rng}.")
            return None
        return v

    def text(self, node: yaml.Node, what: str) -> str | None:
        v = self.value(node) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(v, str) or not v.strip():
            self.error(node, f"{what} is {self.describe(node)}; expected a non-empty name.")
            return None
        return v

    def class_ref(self, node: yaml.Node, what: str) -> ClassRef | None:
        v = self.value(node) if isinstance(node, yaml.ScalarNode) else None
        if isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, int) and v < 0):
            self.error(node, f"{what} is {self.describe(node)}; expected a class name or a class id >= 0.")
            return None
        return ClassRef(v, node.start_mark.line + 1)

    def points(self, node: yaml.Node, what: str) -> list | None:
        if not isinstance(node, yaml.SequenceNode):
            self.error(node, f"{what} is {self.describe(node)}; expected a list of numbers.")
            return None
        return [self.number(n, f"{what}[{i}]", -MAX_COORD, MAX_COORD) for i, n in enumerate(node.value)]


def _threshold(c: _Checker, node: yaml.Node, what: str, base: ClassThreshold) -> ClassThreshold | None:
    """A thresholds entry; the keys it leaves out keep ``base``'s values."""
    keys = c.mapping(node, what, THRESHOLD_KEYS)
    if not isinstance(node, yaml.MappingNode):
        return None
    values = {}
    for key, (_, vnode) in keys.items():
        v = c.number(vnode, f"{what}.{key}", 0, 1.0 if key == "min_conf" else None)
        if v is None:
            return None
        values[key] = float(v)
    return replace(base, **values)


def _region(c: _Checker, name: str, node: yaml.Node) -> Region | None:
    what = f"regions.{name}"
    start = len(c.errors)
    keys = c.mapping(node, what, REGION_KEYS)
    if not isinstance(node, yaml.MappingNode):
        return None
    if len(keys) != 1:
        if len(keys) == 2 or len(c.errors) == start:
            c.error(node, f"{what} has {' and '.join(keys) or 'neither rect nor polygon'}; expected exactly one "
                          "of rect: [x1, y1, x2, y2] or polygon: [[x, y], ...].")  # fmt: skip
        return None
    ((kind, (_, vnode)),) = keys.items()
    if kind == "rect":
        vals = c.points(vnode, f"{what}.rect")
        if vals is None or None in vals:
            return None
        if len(vals) != 4 or not (vals[2] > vals[0] and vals[3] > vals[1]):
            c.error(vnode, f"{what}.rect is {vals}; expected [x1, y1, x2, y2] with x2 > x1 and y2 > y1.")
            return None
        return Region(name, rect=tuple(vals))
    if not isinstance(vnode, yaml.SequenceNode) or not 3 <= len(vnode.value) <= MAX_POLYGON_POINTS:
        got = f"{len(vnode.value):,} points" if isinstance(vnode, yaml.SequenceNode) else c.describe(vnode)
        c.error(vnode, f"{what}.polygon is {got}; expected a list of 3 to {MAX_POLYGON_POINTS:,} [x, y] points "
                       "(simplify a longer outline).")  # fmt: skip
        return None
    pts = []
    for i, pnode in enumerate(vnode.value):
        xy = c.points(pnode, f"{what}.polygon[{i}]")
        if xy is None or None in xy:
            return None
        if len(xy) != 2:
            c.error(pnode, f"{what}.polygon[{i}] is {xy}; expected one [x, y] point.")
            return None
        pts.append(xy)
    try:
        return Region(name, polygon=np.asarray(pts, np.float64))
    except ValueError:
        c.error(vnode, f"{what}.polygon {quoted(pts)} has zero area; expected the corners of a proper polygon.")
        return None


def _line(c: _Checker, name: str, node: yaml.Node, regions: dict[str, Any]) -> CountLine | None:
    what = f"lines.{name}"
    if name in regions:
        c.error(node, f"{what} has the name of a region; expected a name of its own (counts are reported by name).")
        return None
    vals = c.points(node, what)
    if vals is None or None in vals:
        return None
    if len(vals) != 4 or vals[:2] == vals[2:]:
        c.error(node, f"{what} is {vals}; expected [x1, y1, x2, y2]: two different points (frame pixels).")
        return None
    return CountLine(name, (vals[0], vals[1]), (vals[2], vals[3]))


def _named(c: _Checker, keys: dict[str, tuple], key: str, what: str, defined: dict[str, Any]) -> str | None:
    """The name under ``key`` of a rule, checked against the names ``defined`` under ``regions:`` / ``lines:``."""
    if key not in keys:
        return None
    node = keys[key][1]
    name = c.text(node, f"{what}.{key}")
    if name is not None and name not in defined:
        known = ", ".join(defined) or f"none (the file has no {key}s:)"
        c.error(node, f"{what}.{key} {name!r} is not defined under {key}s:; defined: {known}.")
    return name


def _rule(
    c: _Checker, i: int, node: yaml.Node, regions: dict[str, Any], lines: dict[str, Any]
) -> RuleSpec | None:
    what = f"rules[{i}]"
    keys = c.mapping(node, what, RULE_KEYS)
    if not isinstance(node, yaml.MappingNode):
        return None
    start = len(c.errors)
    name = c.text(keys["name"][1], f"{what}.name") if "name" in keys else None
    if "name" not in keys:
        c.error(node, f"{what} has no name:; expected a name (it is shown in the verdict's reasons).")
    region = _named(c, keys, "region", what, regions)
    line = _named(c, keys, "line", what, lines)
    if "region" in keys and "line" in keys:
        c.error(node, f"{what} has both region and line; expected one: a region rule counts objects inside, a line "
                      "rule counts crossings.")  # fmt: skip
    direction = None
    if "direction" in keys:
        direction = c.value(keys["direction"][1]) if isinstance(keys["direction"][1], yaml.ScalarNode) else None
        if direction not in DIRECTIONS:
            c.error(keys["direction"][1], f"{what}.direction is {c.describe(keys['direction'][1])}; expected in or "
                                          "out (leave it out to count both).")  # fmt: skip
        if "line" not in keys:
            c.error(keys["direction"][0], f"{what}.direction needs a line: whose crossings it counts.")
    classes = None
    if "classes" in keys:
        cnode = keys["classes"][1]
        items = cnode.value if isinstance(cnode, yaml.SequenceNode) else [cnode]
        if isinstance(cnode, yaml.SequenceNode) and not items:
            c.error(cnode, f"{what}.classes is an empty list; leave it out to count every class.")
        classes = tuple(c.class_ref(n, f"{what}.classes") for n in items)
    lo = c.number(keys["min"][1], f"{what}.min", 0, None, integer=True) if "min" in keys else 0
    hi = c.number(keys["max"][1], f"{what}.max", 0, None, integer=True) if "max" in keys else None
    if "min" not in keys and "max" not in keys:
        c.error(node, f"{what} has neither min nor max; expected a count rule such as max: 0 or min: 1.")
    elif isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        c.error(keys["min"][1], f"{what}.min {lo} is above max {hi}; no item could pass.")
    overlap = None
    if "overlap" in keys:
        overlap = c.number(keys["overlap"][1], f"{what}.overlap", 0, 1)
        if overlap == 0:
            c.error(keys["overlap"][1], f"{what}.overlap is 0; expected a fraction in (0, 1].")
        if "region" not in keys:
            c.error(keys["overlap"][0], f"{what}.overlap needs a region: to overlap with.")
    if len(c.errors) > start or (classes is not None and None in classes):
        return None
    return RuleSpec(name, region, classes, lo, hi, overlap, node.start_mark.line + 1, line, direction)


def load_rules(path: str | Path) -> RuleSet:
    """Read and validate a rules file. Raises FileNotFoundError, or RulesFileError (every mistake, one
    sentence each, with file:line)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"rules file {path} does not exist." if not path.exists() else
                                f"rules path {path} is not a file.")  # fmt: skip
    c = _Checker(path)
    text = read_yaml_text(path, what="", error=RulesFileError)  # bounded: y9core.files.yaml_load
    root = compose_text(text, source=str(path), what="", error=RulesFileError)
    if root is None:
        raise RulesFileError(
            f"{path} is empty; expected a mapping with a rules: list (see docs/inspection.md)."
        )
    top = c.mapping(root, "the file", TOP_KEYS)
    if not isinstance(root, yaml.MappingNode):
        raise RulesFileError("\n".join(c.errors))
    if "version" in top and c.value(top["version"][1]) != 1:
        c.error(top["version"][1], f"version is {c.describe(top['version'][1])}; expected 1.")
    window_s = DEFAULT_WINDOW_S
    if "window_s" in top:
        window_s = c.number(top["window_s"][1], "window_s", 0, None)
        if window_s == 0:
            c.error(top["window_s"][1], "window_s is 0; expected the seconds of one verdict of a video, above 0.")
    default, per_class = DEFAULT_THRESHOLD, {}
    if "thresholds" in top:
        entries = c.mapping(top["thresholds"][1], "thresholds", None)
        if "default" in entries:
            default = _threshold(c, entries["default"][1], "thresholds.default", default) or default
        for key, (knode, vnode) in entries.items():
            if key == "default":
                continue
            ref = c.class_ref(knode, "a thresholds key")
            th = _threshold(c, vnode, f"thresholds.{key}", default)
            if ref is not None and th is not None:
                per_class[ref] = th
    regions: dict[str, Any] = {}
    if "regions" in top:
        for key, (_, vnode) in c.mapping(top["regions"][1], "regions", None).items():
            regions[str(key)] = _region(c, str(key), vnode)
    lines: dict[str, Any] = {}
    if "lines" in top:
        for key, (_, vnode) in c.mapping(top["lines"][1], "lines", None).items():
            lines[str(key)] = _line(c, str(key), vnode, regions)
    specs: list[RuleSpec] = []
    if "rules" not in top:
        c.error(root, "the file has no rules: list; expected at least one rule (see docs/inspection.md).")
    elif not isinstance(top["rules"][1], yaml.SequenceNode) or not top["rules"][1].value:
        c.error(
            top["rules"][1], f"rules is {c.describe(top['rules'][1])}; expected a list of at least one rule."
        )
    else:
        seen: dict[str, int] = {}
        for i, rnode in enumerate(top["rules"][1].value):
            spec = _rule(c, i, rnode, regions, lines)
            if spec is None:
                continue
            if spec.name in seen:
                c.error(rnode, f"rules[{i}].name {spec.name!r} repeats the rule on line {seen[spec.name]}; "
                               "expected one name per rule.")  # fmt: skip
                continue
            seen[spec.name] = spec.line
            specs.append(spec)
    if c.errors:
        raise RulesFileError("\n".join(c.errors))
    return RuleSet(
        path, default, per_class, {k: v for k, v in regions.items() if v is not None}, tuple(specs),
        {k: v for k, v in lines.items() if v is not None}, float(window_s),
    )
