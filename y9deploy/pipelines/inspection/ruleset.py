"""The validated contents of an inspection rules file: ``RuleSet`` (thresholds, regions, lines, rules) and its
``bind(names)``, which resolves the file's class names and ids against a model's into ``(rules, thresholds)``
for ``frame_rules.inspect``, with one ``file:line`` sentence per class the model does not have.

``rules_file.load_rules(path)`` reads and checks the YAML file and builds one.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from y9core.errors import RulesFileError
from y9deploy.pipelines.inspection.frame_rules import ClassThreshold, Rule, Thresholds
from y9deploy.tracking.counting import CountLine
from y9deploy.tracking.regions import Region

DEFAULT_WINDOW_S = 60.0  # one verdict per minute of a video or stream: max: N reads "at most N per minute"


@dataclass(frozen=True)
class ClassRef:
    """A class named in the file (a name or an id) and the line it is on."""

    value: str | int
    line: int


@dataclass(frozen=True)
class RuleSpec:
    name: str
    region: str | None
    classes: tuple[ClassRef, ...] | None
    min_count: int
    max_count: int | None
    min_overlap: float | None
    line: int
    count_line: str | None = None  # a line rule: crossings of this line (videos and streams)
    direction: str | None = None  # "in" / "out" (None: both) of a line rule


@dataclass(frozen=True)
class RuleSet:
    """A validated rules file; ``bind(names)`` resolves class names into ``(rules, thresholds)`` (a line rule
    becomes a ``Rule`` of its classes and limits without a region; ``gate`` pairs it with its line)."""

    path: Path
    default: ClassThreshold
    per_class: dict[ClassRef, ClassThreshold]
    regions: dict[str, Region]
    rules: tuple[RuleSpec, ...]
    lines: dict[str, CountLine] = field(default_factory=dict)
    window_s: float = DEFAULT_WINDOW_S

    @property
    def line_rules(self) -> tuple[RuleSpec, ...]:
        """The rules that count crossings of a line (they need a video or stream)."""
        return tuple(s for s in self.rules if s.count_line is not None)

    def bind(self, names: list[str]) -> tuple[list[Rule], Thresholds]:
        errors: list[str] = []

        def resolve(ref: ClassRef) -> int | None:
            if isinstance(ref.value, int):
                if 0 <= ref.value < len(names):
                    return ref.value
                errors.append(
                    f"{self.path}:{ref.line}: class id {ref.value} is not in the model; expected 0 to "
                    f"{len(names) - 1}."
                )
                return None
            if ref.value in names:
                return names.index(ref.value)
            close = difflib.get_close_matches(ref.value, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(
                f"{self.path}:{ref.line}: class {ref.value!r} is not one of the model's classes{hint}; expected "
                f"one of {', '.join(names)}."
            )
            return None

        per_class = {}
        for ref, th in self.per_class.items():
            cid = resolve(ref)
            if cid is not None:
                per_class[cid] = th
        rules = []
        for spec in self.rules:
            ids = None if spec.classes is None else [resolve(r) for r in spec.classes]
            rules.append((spec, ids))
        if errors:
            raise RulesFileError("\n".join(errors))
        built = [
            Rule(
                s.name,
                roi=None if s.region is None else self.regions[s.region],
                classes=ids,
                min_count=s.min_count,
                max_count=s.max_count,
                min_overlap=s.min_overlap,
            )
            for s, ids in rules
        ]
        return built, Thresholds.of(per_class, self.default)

    @property
    def lowest_conf(self) -> float:
        return min([self.default.min_conf, *(t.min_conf for t in self.per_class.values())])
