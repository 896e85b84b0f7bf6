"""``ModelFacts``: the one record of what a model is and how it must be fed, carried by every artifact.

Training writes it into the checkpoint (``meta["facts"]``), ``y9 export`` into the ONNX metadata (``y9_facts``),
``y9 build-engine`` into the engine manifest (``facts``) and ``y9 triton`` into the repository (``y9.json``);
``y9deploy.facts.read_facts(path)`` reads it back from any of them, and every command takes its defaults from it.

Fields (``to_dict`` keys in brackets where they differ):

- ``imgsz`` (h, w): the size the model was trained and validated at; an artifact run at another size gives other
  detections (an ONNX model or engine may have another input size: its graph says which);
- ``names``: class names, index = class id (their count is the class count of every artifact; empty only for a
  foreign end-to-end model whose class count nothing tells);
- ``strides``: the detection strides, e.g. (8, 16, 32);
- ``letterbox``: how a frame becomes the network input (``LetterboxRule``: auto, scaleup, stride, color);
- ``layout`` "NCHW", ``channels`` "RGB", ``normalization`` "1/255": the input tensor (the only ones y9 feeds);
- ``precision`` "fp32" | "fp16" | "int8" and ``end2end`` (NMS inside the graph): facts of one artifact, which change
  along the hand-off (an FP16 ONNX of an FP32 checkpoint is the same model); ``ARTIFACT_FIELDS`` names them;
  ``calibration_sha256``: the digest of the images an INT8 artifact was calibrated on (empty otherwise);
- ``model`` (architecture, e.g. gelan-s), ``recipe`` (the training recipe), ``source_sha256`` (sha256 of the
  checkpoint every artifact comes from), ``y9_version`` (the y9 that wrote the record).

``ModelFacts.from_dict(raw, where)`` checks every entry's type and range and raises one ``ModelFileError``
sentence naming ``where`` (the file), the entry, its value and what was expected. numpy-free, imports nothing of y9
but the error types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from y9core.errors import ModelFileError, Y9Notice
from y9core.shorten import quoted

FACTS_FORMAT = "y9-model-facts/1"
LAYOUTS = ("NCHW",)
CHANNELS = ("RGB",)
NORMALIZATIONS = ("1/255",)
PRECISIONS = ("fp32", "fp16", "int8")
#: facts that belong to one artifact, not to the model (left out when artifacts of one model are compared)
ARTIFACT_FIELDS = ("precision", "end2end", "y9_version", "calibration_sha256")
MAX_CLASSES = 100_000
MAX_SIDE = 16_384
MAX_NAME_CHARS = 200  # characters of one class name
_SHA256 = re.compile(r"[0-9a-f]{64}")


class FactsWarning(Y9Notice):
    """y9's notice about a model: an explicit setting differs from the model's facts (e.g. another input size than
    the trained one), its class names repeat a name, or its file's digest is missing (not checked). The CLI prints
    each once as one ``warning:`` line (``y9cli.notices``)."""


def _bad(where: str, entry: str, value: Any, expected: str) -> ModelFileError:
    shown = repr(value) if isinstance(value, (bool, int, float, str)) or value is None else type(value).__name__
    if isinstance(value, (list, tuple)) and len(value) <= 8:
        shown = repr(list(value))
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ModelFileError(f"{where}: model facts entry '{entry}' is {shown}; expected {expected}.")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _choice(value: Any, allowed: tuple[str, ...], where: str, entry: str) -> str:
    if value not in allowed:
        raise _bad(where, entry, value, " or ".join(repr(a) for a in allowed))
    return str(value)


def _flag(value: Any, where: str, entry: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(where, entry, value, "true or false")
    return value


def _text(value: Any, where: str, entry: str, limit: int = 200) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise _bad(where, entry, value, f"a string of at most {limit} characters")
    return value


def check_hw(value: Any, where: str, entry: str = "imgsz") -> tuple[int, int]:
    """``[h, w]`` (or one side) of positive integers up to MAX_SIDE -> ``(h, w)``."""
    if _is_int(value):
        value = [value, value]
    ok = isinstance(value, (list, tuple)) and len(value) == 2
    if not ok or not all(_is_int(v) and 0 < v <= MAX_SIDE for v in value):
        raise _bad(where, entry, value, f"[height, width] of positive integers up to {MAX_SIDE}")
    return int(value[0]), int(value[1])


def check_names(value: Any, where: str, entry: str = "names") -> tuple[str, ...]:
    """A list of up to MAX_CLASSES class names of 1 to MAX_NAME_CHARS characters; one sentence naming the first
    name that is not one."""
    expected = f"a list of up to {MAX_CLASSES} class names (non-empty strings)"
    if not isinstance(value, (list, tuple)) or len(value) > MAX_CLASSES or not all(isinstance(n, str) and n for n in value):
        raise _bad(where, entry, value, expected)
    for i, n in enumerate(value):
        if len(n) > MAX_NAME_CHARS:
            raise ModelFileError(
                f"{where}: model facts entry '{entry}[{i}]' is a class name of {len(n):,} characters ({quoted(n, 60)});"
                f" expected at most {MAX_NAME_CHARS} characters per class name."
            )
    return tuple(value)


def check_strides(value: Any, where: str, entry: str = "strides") -> tuple[int, ...]:
    ok = isinstance(value, (list, tuple)) and 0 < len(value) <= 8
    if not ok or not all(_is_int(v) and 1 <= v <= 1024 for v in value) or list(value) != sorted(set(value)):
        raise _bad(where, entry, value, "an increasing list of positive integers such as [8, 16, 32]")
    return tuple(int(v) for v in value)


@dataclass(frozen=True)
class LetterboxRule:
    """How a frame is letterboxed to the network input (the official letterbox's arguments).

    ``auto``: pad only to a multiple of ``stride`` (False: pad to the full input); ``scaleup``: enlarge frames
    smaller than the input; ``color``: the padding colour, (b, g, r)."""

    auto: bool = False
    scaleup: bool = True
    stride: int = 32
    color: tuple[int, int, int] = (114, 114, 114)

    def __post_init__(self) -> None:
        checked = LetterboxRule.from_dict(self.to_dict(), "LetterboxRule")
        object.__setattr__(self, "color", checked.color)  # one form: (b, g, r)

    def to_dict(self) -> dict[str, Any]:
        c = tuple(self.color) if isinstance(self.color, (list, tuple)) else (self.color,) * 3
        return {"auto": self.auto, "scaleup": self.scaleup, "stride": self.stride,
                "color": c[0] if len(set(c)) == 1 else list(c)}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: Any, where: str, entry: str = "letterbox") -> LetterboxRule:
        """From ``{"auto", "scaleup", "stride", "color"}`` (missing keys: the defaults); one sentence if malformed."""
        if not isinstance(raw, Mapping) or not set(raw) <= {"auto", "scaleup", "stride", "color"}:
            raise _bad(where, entry, raw, "an object with keys among auto, scaleup, stride, color")
        auto = _flag(raw.get("auto", False), where, f"{entry}.auto")
        scaleup = _flag(raw.get("scaleup", True), where, f"{entry}.scaleup")
        stride = raw.get("stride", 32)
        if not _is_int(stride) or not 1 <= stride <= 1024:
            raise _bad(where, f"{entry}.stride", stride, "a positive integer such as 32")
        color = raw.get("color", 114)
        colors = [color] * 3 if _is_int(color) else color
        ok = isinstance(colors, (list, tuple)) and len(colors) == 3
        if not ok or not all(_is_int(c) and 0 <= c <= 255 for c in colors):
            raise _bad(where, f"{entry}.color", color, "a grey level 0..255 or three of them")
        obj = object.__new__(cls)  # validated here: skip __post_init__'s second pass
        for name, value in (("auto", auto), ("scaleup", scaleup), ("stride", int(stride)),
                            ("color", tuple(int(c) for c in colors))):  # fmt: skip
            object.__setattr__(obj, name, value)
        return obj


@dataclass(frozen=True, repr=False)
class ModelFacts:
    """What a model is and how it must be fed (see the module docstring for each field)."""

    imgsz: tuple[int, int]
    names: tuple[str, ...]
    strides: tuple[int, ...] = (8, 16, 32)
    letterbox: LetterboxRule = field(default_factory=LetterboxRule)
    layout: str = "NCHW"
    channels: str = "RGB"
    normalization: str = "1/255"
    precision: str = "fp32"
    end2end: bool = False
    model: str = ""
    recipe: str = ""
    source_sha256: str = ""
    y9_version: str = ""
    calibration_sha256: str = ""

    def __post_init__(self) -> None:
        checked = ModelFacts.from_dict(self.to_dict(), "ModelFacts")
        for f in fields(self):  # normalised forms (tuples), so that equal facts compare equal
            object.__setattr__(self, f.name, object.__getattribute__(checked, f.name))

    def __repr__(self) -> str:
        names = ", ".join(repr(n) for n in self.names[:3]) + (f", ... ({self.nc} in all)" if self.nc > 3 else "")
        rest = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.name not in ("imgsz", "names"))
        return f"ModelFacts(imgsz={self.imgsz!r}, names=({names}), {rest})"

    # ------------------------------------------------------------------ derived
    @property
    def nc(self) -> int:
        """The number of classes."""
        return len(self.names)

    @property
    def half(self) -> bool:
        return self.precision == "fp16"

    # ------------------------------------------------------------------ conversions
    def to_dict(self) -> dict[str, Any]:
        """JSON-able: lists for tuples, the letterbox as a dict, and ``"format"``."""
        out = asdict(self)
        out.update(imgsz=list(self.imgsz), names=list(self.names), strides=list(self.strides),
                   letterbox=self.letterbox.to_dict() if isinstance(self.letterbox, LetterboxRule) else self.letterbox)  # fmt: skip
        return {"format": FACTS_FORMAT, **out}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> ModelFacts:
        """Facts from ``to_dict``'s form; ``where`` (the file) names the source in the one-sentence
        ``ModelFileError`` a wrong type, a value out of range or an unknown entry raises."""
        if not isinstance(raw, Mapping):
            raise ModelFileError(f"{where}: the model facts are a {type(raw).__name__}; expected a JSON object.")
        known = {f.name for f in fields(cls)} | {"format"}
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise ModelFileError(
                f"{where}: the model facts have unknown entries {unknown[:5]}; expected only {sorted(known)}."
            )
        fmt = raw.get("format", FACTS_FORMAT)
        if fmt != FACTS_FORMAT:
            raise _bad(where, "format", fmt, f"{FACTS_FORMAT!r} (written by another y9 version?)")
        for name in ("imgsz", "names"):
            if name not in raw:
                raise ModelFileError(f"{where}: the model facts lack '{name}'; expected it with the other entries.")
        sha = raw.get("source_sha256", "")
        if not isinstance(sha, str) or (sha and not _SHA256.fullmatch(sha)):
            raise _bad(where, "source_sha256", sha, "64 lowercase hex digits, or empty")
        calib = raw.get("calibration_sha256", "")
        if not isinstance(calib, str) or (calib and not _SHA256.fullmatch(calib)):
            raise _bad(where, "calibration_sha256", calib, "64 lowercase hex digits, or empty")
        lb = raw.get("letterbox", {})
        values = dict(
            imgsz=check_hw(raw["imgsz"], where),
            names=check_names(raw["names"], where),
            strides=check_strides(raw.get("strides", [8, 16, 32]), where),
            letterbox=lb if isinstance(lb, LetterboxRule) else LetterboxRule.from_dict(lb, where),
            layout=_choice(raw.get("layout", "NCHW"), LAYOUTS, where, "layout"),
            channels=_choice(raw.get("channels", "RGB"), CHANNELS, where, "channels"),
            normalization=_choice(raw.get("normalization", "1/255"), NORMALIZATIONS, where, "normalization"),
            precision=_choice(raw.get("precision", "fp32"), PRECISIONS, where, "precision"),
            end2end=_flag(raw.get("end2end", False), where, "end2end"),
            model=_text(raw.get("model", ""), where, "model"),
            recipe=_text(raw.get("recipe", ""), where, "recipe"),
            source_sha256=sha,
            y9_version=_text(raw.get("y9_version", ""), where, "y9_version", 40),
            calibration_sha256=calib,
        )
        if values["letterbox"].stride < max(values["strides"]) and values["letterbox"].auto:
            raise _bad(where, "letterbox.stride", values["letterbox"].stride,
                       f"at least the largest model stride {max(values['strides'])} with auto padding")  # fmt: skip
        obj = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(obj, name, value)
        return obj

    def replace(self, **changes: Any) -> ModelFacts:
        """A copy with ``changes`` (validated)."""
        return replace(self, **changes)

    # ------------------------------------------------------------------ checks and comparisons
    def check_classes(self, nc: int | None, where: str) -> None:
        """One sentence unless the artifact's class count ``nc`` (None: unknown) equals the number of names."""
        if nc is not None and nc != self.nc:
            raise ModelFileError(
                f"{where}: its model facts list {self.nc} class names but the model outputs {nc} classes; "
                "expected one name per class (a damaged or hand-edited file)."
            )

    def differences(self, other: ModelFacts, *, ignore: tuple[str, ...] = ARTIFACT_FIELDS) -> list[str]:
        """``["imgsz: [416, 416] vs [640, 640]", ...]`` for every field (but ``ignore``) that differs."""
        a, b = self.to_dict(), other.to_dict()
        return [f"{k}: {a[k]!r} vs {b[k]!r}" for k in a if k not in ignore and a[k] != b[k]]


def size_notice(facts: ModelFacts, hw: tuple[int, int], what: str) -> str | None:
    """The sentence to print once when ``what`` (e.g. "model.onnx", "--imgsz 640") runs at ``hw`` while the
    model was trained at another size; None when the sizes agree."""
    hw = (int(hw[0]), int(hw[1]))
    if hw == tuple(facts.imgsz):
        return None
    th, tw = facts.imgsz
    return (
        f"{what} runs at {hw[0]}x{hw[1]} but the model was trained and validated at {th}x{tw}: its detections and "
        f"accuracy will differ from the validated ones (leave the size unset to use {th}x{tw})."
    )
