"""data.yaml: parse and validate.

Keys: ``path`` (dataset root, relative to the yaml's folder; default that folder), ``train`` / ``val``
(optional ``test``): each a folder, a ``.txt`` list of image paths, or a list of those, relative to ``path``;
``names`` (a list, or a dict ``{index: name}`` with indices 0..nc-1) and/or ``nc``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from y9core.errors import DataError
from y9core.files.yaml_load import load_yaml_file
from y9core.model_facts import MAX_NAME_CHARS
from y9core.shorten import quoted, shorten

from .paths import list_images

SPLITS = ("train", "val", "test")


@dataclass
class DataConfig:
    """A validated data.yaml.

    Attributes:
        yaml_path: the data.yaml file; root: the dataset root (``path`` resolved).
        splits: split name -> list of resolved sources (folders or list files) for train, val and test if given.
        names: class names, index = class id; nc: ``len(names)``.
    """

    yaml_path: Path
    root: Path
    names: list[str]
    splits: dict[str, list[Path]] = field(default_factory=dict)

    @property
    def nc(self) -> int:
        return len(self.names)

    def sources(self, split: str) -> list[Path]:
        if split not in self.splits:
            raise DataError(
                f"data.yaml {self.yaml_path} has no '{split}' entry; expected one of {sorted(self.splits)}."
            )
        return self.splits[split]

    def image_files(self, split: str, skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
        """Every image of a split (see ``paths.list_images``; ``skipped`` receives entries left out)."""
        return list_images(
            self.sources(split), origin=f"data.yaml {self.yaml_path} key '{split}'", skipped=skipped
        )


def _parse_names(raw: dict, yaml_path: Path) -> list[str]:
    names = raw.get("names")
    nc = raw.get("nc")
    if nc is not None and (not isinstance(nc, int) or isinstance(nc, bool) or nc < 1):
        raise DataError(f"data.yaml {yaml_path} has nc={quoted(nc)}; expected a positive integer.")
    if names is None:
        if nc is None:
            raise DataError(f"data.yaml {yaml_path} has neither 'names' nor 'nc'; expected at least one.")
        return [f"class{i}" for i in range(nc)]
    if isinstance(names, dict):
        try:
            keys = sorted(int(k) for k in names)
        except (TypeError, ValueError):
            raise DataError(
                f"data.yaml {yaml_path} has names keys {quoted(list(names))}; expected integer class indices."
            ) from None
        if keys != list(range(len(keys))):
            raise DataError(
                f"data.yaml {yaml_path} has names indices {quoted(keys)}; expected 0..{len(keys) - 1} without gaps."
            )
        by_int = {int(k): v for k, v in names.items()}
        names = [by_int[i] for i in range(len(keys))]
    elif not isinstance(names, list):
        raise DataError(
            f"data.yaml {yaml_path} has names of type {type(names).__name__}; expected a list or dict."
        )
    if not names:
        raise DataError(f"data.yaml {yaml_path} has an empty 'names'; expected at least one class.")
    for i, n in enumerate(names):
        if n is None or not str(n).strip():
            raise DataError(
                f"data.yaml {yaml_path} has an empty name for class {i} ({quoted(n)}); expected a non-empty name "
                "for every class."
            )
    names = [str(n) for n in names]
    for i, n in enumerate(names):
        if len(n) > MAX_NAME_CHARS:
            raise DataError(
                f"data.yaml {yaml_path} names class {i} with {len(n):,} characters ({quoted(n, 60)}); expected a class "
                f"name of at most {MAX_NAME_CHARS} characters."
            )
    first: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in first:
            raise DataError(
                f"data.yaml {yaml_path} names {quoted(n)} twice (classes {first[n]} and {i}); expected distinct "
                "class names."
            )
        first[n] = i
    if nc is not None and nc != len(names):
        raise DataError(f"data.yaml {yaml_path} has nc={nc} but {len(names)} names; expected them to agree.")
    return names


def _resolve_sources(value, root: Path, yaml_path: Path, key: str) -> list[Path]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise DataError(
                f"data.yaml {yaml_path} key '{key}' holds {quoted(item)}; expected a folder or list-file path."
            )
        p = Path(item).expanduser()
        p = p if p.is_absolute() else root / p
        if not p.exists():
            raise DataError(
                f"data.yaml {yaml_path} key '{key}' points at {p}, which does not exist; expected an image "
                "folder or a .txt list of image paths."
            )
        out.append(p.resolve())
    return out


def load_data_yaml(path: str | Path, *, require: tuple[str, ...] = ("train", "val")) -> DataConfig:
    """Read and validate a data.yaml; every named folder/list file must exist.

    Args:
        require: split keys that must be present.
    Raises:
        DataError: one sentence naming the file, the key/value and what was expected.
    """
    yaml_path = Path(path).expanduser()
    if yaml_path.is_dir():
        raise DataError(f"data.yaml {yaml_path} is a folder; expected the path of a data.yaml file.")
    if not yaml_path.is_file():
        raise DataError(
            f"data.yaml {yaml_path} does not exist; expected a YAML file with path, train, val, names."
        )
    yaml_path = yaml_path.resolve()
    raw = load_yaml_file(yaml_path, what="data.yaml", error=DataError)  # bounded; a syntax error names file:line:column
    if not isinstance(raw, dict):
        raise DataError(f"data.yaml {yaml_path} holds a {type(raw).__name__}; expected a mapping of keys.")
    root_value = raw.get("path") or "."
    root = Path(str(root_value)).expanduser()
    root = root if root.is_absolute() else yaml_path.parent / root
    if not root.is_dir():
        raise DataError(f"data.yaml {yaml_path} has path {quoted(root_value)} -> {shorten(str(root))}, which is not a folder.")
    names = _parse_names(raw, yaml_path)
    splits = {}
    for key in SPLITS:
        if raw.get(key):
            splits[key] = _resolve_sources(raw[key], root, yaml_path, key)
        elif key in require:
            raise DataError(
                f"data.yaml {yaml_path} has no '{key}' entry; expected an image folder or list file."
            )
    return DataConfig(yaml_path=yaml_path, root=root.resolve(), names=names, splits=splits)
