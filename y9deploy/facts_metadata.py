"""``ModelFacts`` as the string key/value metadata of an ONNX file (``metadata_props``), and back.

The same strings travel in an engine manifest (``onnx_metadata``) and in a Triton repository (the ``y9_metadata``
parameter), so one parser reads all three. Keys (JSON for structured values, "0"/"1" for flags):

- ``names``, ``stride``, ``letterbox``, ``model``, ``source_sha256``, ``y9_version``, ``end2end``, ``half``
  (the facts' precision fp16), ``precision`` (written for INT8 files only: "int8"), ``calibration_sha256`` (INT8
  files: the digest of their calibration images), and ``imgsz``: the INPUT size of this file (fixed by its graph);
- ``trained_imgsz`` (the facts' ``imgsz``; absent in files of older y9 versions, where it equals ``imgsz``),
  ``layout``, ``channels``, ``normalization``, ``recipe``;
- artifact entries that are not model facts: ``dynamic_batch``, ``nms_defaults`` (end2end thresholds).

Files from other tools may lack every entry (names then default to ``class0..`` with a warning naming the file);
a file y9 wrote (``y9_version`` present) must carry ``REQUIRED``. Imports neither onnx nor torch.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

from y9core.errors import ModelFileError
from y9core.model_facts import LetterboxRule, ModelFacts

REQUIRED = ("names", "stride", "imgsz", "letterbox", "model")  # what every `y9 export` writes
FACT_KEYS = ("names", "stride", "imgsz", "trained_imgsz", "letterbox", "model", "source_sha256", "y9_version",
             "end2end", "half", "layout", "channels", "normalization", "recipe", "precision",
             "calibration_sha256")  # fmt: skip
ARTIFACT_KEYS = ("dynamic_batch", "nms_defaults")
DEFAULT_LETTERBOX = {"auto": False, "scaleup": True, "color": 114, "stride": 32}


def facts_to_props(
    facts: ModelFacts,
    *,
    input_hw: tuple[int, int],
    dynamic_batch: bool = False,
    nms_defaults: Mapping[str, float] | None = None,
) -> dict[str, str]:
    """The metadata strings of a file holding ``facts`` with input size ``input_hw``."""
    props = {
        "names": json.dumps(list(facts.names)),
        "stride": json.dumps([int(s) for s in facts.strides]),
        "imgsz": json.dumps([int(input_hw[0]), int(input_hw[1])]),
        "trained_imgsz": json.dumps(list(facts.imgsz)),
        "letterbox": json.dumps(facts.letterbox.to_dict()),
        "model": facts.model,
        "source_sha256": facts.source_sha256,
        "y9_version": facts.y9_version,
        "end2end": "1" if facts.end2end else "0",
        "dynamic_batch": "1" if dynamic_batch else "0",
        "half": "1" if facts.half else "0",
        "layout": facts.layout,
        "channels": facts.channels,
        "normalization": facts.normalization,
        "recipe": facts.recipe,
    }
    if facts.precision == "int8":
        props.update(precision="int8", calibration_sha256=facts.calibration_sha256)
    if nms_defaults:
        props["nms_defaults"] = json.dumps(dict(nms_defaults))
    return props


def _json(props: Mapping[str, str], key: str, default: Any, where: str) -> Any:
    if key not in props or props[key] == "":
        return default
    try:
        return json.loads(props[key])
    except (TypeError, json.JSONDecodeError):
        raise ModelFileError(f"{where}: metadata entry {key!r} = {str(props[key])[:80]!r} is not valid JSON.") from None


def _malformed(where: str, key: str, value: Any, expected: str) -> ModelFileError:
    shown = repr(value)
    return ModelFileError(
        f"{where}: metadata entry {key!r} = {shown[:80] + ('...' if len(shown) > 80 else '')} is malformed; "
        f"expected {expected}."
    )


def _names(raw: Any, where: str) -> list[str]:
    if isinstance(raw, dict):  # {"0": "person", ...} written by other tools
        try:
            keys = sorted(raw, key=lambda k: int(k))
        except (TypeError, ValueError):
            raise _malformed(where, "names", raw, "a list of class names or {index: name}") from None
        if [int(k) for k in keys] != list(range(len(keys))):
            raise _malformed(where, "names", raw, "class indices 0..N-1 without gaps")
        raw = [raw[k] for k in keys]
    if not isinstance(raw, list) or not raw or not all(isinstance(n, (str, int)) and str(n) for n in raw):
        raise _malformed(where, "names", raw, "a JSON list of class names")
    return [str(n) for n in raw]


def _size(raw: Any, where: str, key: str) -> tuple[int, int]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = [raw, raw]
    ok = isinstance(raw, list) and len(raw) == 2
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in raw)
    if not ok:
        raise _malformed(where, key, raw, "[height, width] of positive integers")
    return int(raw[0]), int(raw[1])


def _strides(raw: Any, where: str) -> list[int]:
    ok = isinstance(raw, list) and len(raw) > 0
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1 for v in raw)
    if not ok or any(float(v) != int(v) for v in raw):
        raise _malformed(where, "stride", raw, "a non-empty list of positive integers such as [8, 16, 32]")
    return [int(v) for v in raw]


def input_size(props: Mapping[str, str], where: str) -> tuple[int, int]:
    """The ``imgsz`` entry: the file's input (h, w); ModelFileError when absent or malformed."""
    raw = _json(props, "imgsz", None, where)
    if raw is None:
        raise ModelFileError(f"{where}: the input size is not in the metadata ('imgsz').")
    return _size(raw, where, "imgsz")


def metadata_strides(props: Mapping[str, str], where: str) -> list[int]:
    """The ``stride`` entry (default [8, 16, 32]); ModelFileError when malformed."""
    return _strides(_json(props, "stride", [8, 16, 32], where), where)


def _letterbox(raw: Any, where: str) -> LetterboxRule:
    if not isinstance(raw, dict) or not set(raw) <= set(DEFAULT_LETTERBOX):
        raise _malformed(where, "letterbox", raw, f"an object with keys among {sorted(DEFAULT_LETTERBOX)}")
    try:
        return LetterboxRule.from_dict(raw, where)
    except ModelFileError as exc:
        raise _malformed(where, "letterbox", raw, str(exc).split("; expected ", 1)[-1].rstrip(".")) from None


def _flag(props: Mapping[str, str], key: str, where: str) -> bool:
    value = props.get(key, "0")
    if value not in ("0", "1", ""):
        raise _malformed(where, key, value, '"0" or "1"')
    return value == "1"


def props_flag(props: Mapping[str, str], key: str, where: str) -> bool:
    """A "0"/"1" entry such as ``dynamic_batch`` (absent: False)."""
    return _flag(props, key, where)


def nms_defaults(props: Mapping[str, str], where: str) -> dict[str, float]:
    """The ``nms_defaults`` entry of an end2end export ({} when absent)."""
    raw = props.get("nms_defaults", "{}") or "{}"
    try:
        return {str(k): float(v) for k, v in json.loads(raw).items()}
    except (ValueError, TypeError, AttributeError):
        raise ModelFileError(
            f"{where}: metadata entry 'nms_defaults' = {raw[:80]!r} is malformed; expected a JSON object of "
            "numbers (score_threshold, iou_threshold, max_output_boxes)."
        ) from None


def _default_names(where: str, nc: int | None) -> list[str]:
    what = (
        f"its {nc} classes are called class0..class{nc - 1}"
        if nc
        else "its outputs do not give the class count, so detections carry no class names"
    )
    warnings.warn(f"{where} has no 'names' metadata; {what}.", stacklevel=4)
    return [f"class{i}" for i in range(nc or 0)]


def facts_from_props(
    props: Mapping[str, str],
    *,
    where: str,
    input_hw: tuple[int, int] | None = None,
    nc: int | None = None,
) -> ModelFacts:
    """Metadata strings -> ``ModelFacts``; every entry checked, one ``ModelFileError`` sentence naming ``where``.

    ``input_hw``: the (h, w) the file's graph fixes (used when ``imgsz`` is absent; a different ``imgsz`` is an
    error); ``nc``: the class count the outputs have (names default to ``class0..``; a mismatch is an error).
    """
    props = {str(k): str(v) for k, v in props.items()}
    if "y9_version" in props:
        missing = [k for k in REQUIRED if props.get(k, "") == ""]
        if missing:
            raise ModelFileError(
                f"{where}: y9 metadata lacks {', '.join(missing)}; expected every entry `y9 export` writes "
                f"({', '.join(REQUIRED)}): re-export the model."
            )
    raw_names = _json(props, "names", None, where)
    names = _default_names(where, nc) if raw_names is None else _names(raw_names, where)
    if nc is not None and len(names) != nc:
        raise ModelFileError(
            f"{where}: metadata lists {len(names)} class names but the model outputs {nc} classes; expected one "
            "name per class (a damaged or hand-edited file)."
        )
    size = _json(props, "imgsz", None, where)
    if size is None:
        if input_hw is None:
            raise ModelFileError(
                f"{where}: the input size is neither in the metadata ('imgsz') nor fixed by the model."
            )
        size = list(input_hw)
    hw = _size(size, where, "imgsz")
    if input_hw is not None and hw != tuple(input_hw):
        raise ModelFileError(
            f"{where}: metadata says imgsz {list(hw)} but the input is {input_hw[0]}x{input_hw[1]}; the file is "
            "inconsistent."
        )
    trained = _size(_json(props, "trained_imgsz", list(hw), where), where, "trained_imgsz")
    raw_lb = _json(props, "letterbox", {}, where)
    return ModelFacts.from_dict(
        {
            "imgsz": list(trained),
            "names": names,
            "strides": _strides(_json(props, "stride", [8, 16, 32], where), where),
            "letterbox": _letterbox(raw_lb, where),
            "layout": props.get("layout") or "NCHW",
            "channels": props.get("channels") or "RGB",
            "normalization": props.get("normalization") or "1/255",
            "precision": _precision(props, where),
            "end2end": _flag(props, "end2end", where),
            "model": props.get("model", ""),
            "recipe": props.get("recipe", ""),
            "source_sha256": props.get("source_sha256", ""),
            "y9_version": props.get("y9_version", ""),
            "calibration_sha256": props.get("calibration_sha256", ""),
        },
        where,
    )


def _precision(props: Mapping[str, str], where: str) -> str:
    """"int8" when ``precision`` says so (INT8 files), else ``half``'s fp16 / fp32."""
    half = _flag(props, "half", where)
    given = props.get("precision")
    if given is None or given in ("fp16", "fp32"):
        return "fp16" if half else "fp32"
    if given != "int8" or half:
        raise _malformed(where, "precision", given, "'int8' with half 0 (or no 'precision' entry)")
    return "int8"


def extra_props(props: Mapping[str, str]) -> dict[str, str]:
    """Entries that are neither facts nor artifact entries (kept and shown, never interpreted)."""
    return {k: v for k, v in props.items() if k not in FACT_KEYS and k not in ARTIFACT_KEYS}
