"""The public result of a detector: ``Detections`` (numpy only)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError
from y9core.model_facts import FactsWarning
from y9core.shorten import quoted

Names = Sequence[str] | Mapping[int, str]


def checked_names(names: object) -> list[str] | dict[int, str]:
    """``names`` as a Detections holds them (a list of str, or a dict of int -> str); TypeError otherwise."""
    if isinstance(names, Mapping):
        out = {}
        for k, v in names.items():
            if not isinstance(k, (int, np.integer)) or not isinstance(v, str):
                raise TypeError(
                    f"names has the entry {k!r}: {v!r}; expected a mapping of int class id -> str."
                )
            out[int(k)] = v
        _warn_repeated(out)
        return out
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise TypeError(
            f"names is a {type(names).__name__}; expected a list of class names or a dict id -> name."
        )
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise TypeError(f"names holds {bad[0]!r}; expected a list of str class names.")
    names = list(names)
    _warn_repeated(names)
    return names


def _row(values: np.ndarray, i: int) -> str:
    return "[" + ", ".join(f"{float(v):g}" for v in np.atleast_1d(values[i])) + "]"


def check_values(xyxy: np.ndarray, conf: np.ndarray, cls: np.ndarray, names: list[str] | dict[int, str]) -> None:
    """One ValueError sentence for the first row that is not a detection: a box with NaN/inf or x2 < x1 or y2 < y1,
    a confidence outside [0, 1], a class id below 0 or (names given) one the names do not cover."""
    if len(xyxy) == 0:
        return
    bad = np.flatnonzero(~np.isfinite(xyxy).all(axis=1))
    if bad.size:
        raise ValueError(f"Detections.xyxy row {bad[0]} is {_row(xyxy, bad[0])}; expected finite x1, y1, x2, y2 in "
                         "frame pixels.")  # fmt: skip
    bad = np.flatnonzero((xyxy[:, 2] < xyxy[:, 0]) | (xyxy[:, 3] < xyxy[:, 1]))
    if bad.size:
        raise ValueError(f"Detections.xyxy row {bad[0]} is {_row(xyxy, bad[0])}, an inverted box; expected x1 <= x2 "
                         "and y1 <= y2 (corners x1, y1, x2, y2).")  # fmt: skip
    bad = np.flatnonzero(~((conf >= 0) & (conf <= 1)))  # NaN is caught too
    if bad.size:
        raise ValueError(f"Detections.confidence row {bad[0]} is {float(conf[bad[0]]):g}; expected a score in [0, 1].")
    bad = np.flatnonzero(cls < 0)
    if bad.size:
        raise ValueError(f"Detections.class_id row {bad[0]} is {int(cls[bad[0]])}; expected a class id >= 0.")
    if not names:
        return
    if isinstance(names, dict):
        bad = np.flatnonzero(~np.isin(cls, np.fromiter(names, np.int64, len(names))))
        known = f"the ids {_ids(sorted(names))} that names covers"
    else:
        bad = np.flatnonzero(cls >= len(names))
        known = f"0..{len(names) - 1} ({len(names)} names)"
    if bad.size:
        raise ValueError(f"Detections.class_id row {bad[0]} is {int(cls[bad[0]])}, a class without a name; expected "
                         f"{known}, or names for every class.")  # fmt: skip


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:8])) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")


_SEEN_NAMES: set[int] = set()  # sets of names already looked at (each warned about once)


def _warn_repeated(names: list[str] | dict[int, str]) -> None:
    """Warn once per set of names that repeats a name (detections of those classes cannot be told apart by name)."""
    key = hash(tuple(names.items()) if isinstance(names, dict) else tuple(names))
    if key in _SEEN_NAMES:
        return
    if len(_SEEN_NAMES) > 1024:
        _SEEN_NAMES.clear()
    _SEEN_NAMES.add(key)
    ids: dict[str, list[int]] = {}
    for i, n in names.items() if isinstance(names, dict) else enumerate(names):
        ids.setdefault(n, []).append(int(i))
    repeated = [(n, v) for n, v in ids.items() if len(v) > 1]
    if not repeated:
        return
    shown = "; ".join(f"{quoted(n, 40)} for classes {_ids(v)}" for n, v in repeated[:3])
    more = f" and {len(repeated) - 3} more names" if len(repeated) > 3 else ""
    warnings.warn(f"the class names repeat {shown}{more}: detections of those classes cannot be told apart by name; "
                  "expected distinct class names.", FactsWarning, stacklevel=4)  # fmt: skip


@dataclass(frozen=True, eq=False)
class Detections:
    """Detections of one frame.

    Attributes:
        xyxy (ndarray[N, 4] float32): x1, y1, x2, y2 in frame pixels.
        confidence (ndarray[N] float32): scores in [0, 1].
        class_id (ndarray[N] int64): class indices.
        names (list[str] | dict[int, str]): class names by id.

    Arrays are converted on construction (lists are fine) and checked at this boundary (the constructor and every
    ``from_*``): a wrong shape, non-numeric values, lengths that disagree, a box with NaN/inf or x2 < x1 or y2 < y1,
    a confidence outside [0, 1], a class id below 0 or (names given) without a name raise one ValueError/TypeError
    sentence naming the row; names that repeat a name are warned about once. Rows are in the order given
    (``postprocess``: by score).
    """

    xyxy: np.ndarray
    confidence: np.ndarray
    class_id: np.ndarray
    names: list[str] | dict[int, str] = field(default_factory=list)

    def __post_init__(self) -> None:
        xyxy = np.asarray(self.xyxy)
        conf = np.asarray(self.confidence)
        cls = np.asarray(self.class_id)
        for name, arr in (("xyxy", xyxy), ("confidence", conf), ("class_id", cls)):
            if not np.issubdtype(arr.dtype, np.number):
                raise TypeError(f"Detections.{name} has dtype {arr.dtype}; expected numbers.")
        if xyxy.size == 0 and xyxy.ndim < 2:
            xyxy = xyxy.reshape(0, 4)
        if xyxy.ndim != 2 or xyxy.shape[1] != 4:
            raise ValueError(f"Detections.xyxy has shape {xyxy.shape}; expected (N, 4) x1, y1, x2, y2.")
        n = xyxy.shape[0]
        if conf.shape != (n,):
            raise ValueError(f"Detections.confidence has shape {conf.shape}; expected ({n},) to match xyxy.")
        if cls.shape != (n,):
            raise ValueError(f"Detections.class_id has shape {cls.shape}; expected ({n},) to match xyxy.")
        if np.issubdtype(cls.dtype, np.floating) and not np.all(np.isfinite(cls) & (cls == np.round(cls))):
            raise ValueError("Detections.class_id holds non-integer values; expected integer class ids.")
        names = checked_names(self.names)
        with np.errstate(over="ignore", invalid="ignore"):  # 1e300 -> inf: refused below in one sentence
            xyxy = np.ascontiguousarray(xyxy, dtype=np.float32)
            conf = np.ascontiguousarray(conf, dtype=np.float32)
        cls = np.ascontiguousarray(cls, dtype=np.int64)
        check_values(xyxy, conf, cls, names)
        object.__setattr__(self, "xyxy", xyxy)
        object.__setattr__(self, "confidence", conf)
        object.__setattr__(self, "class_id", cls)
        object.__setattr__(self, "names", names)

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def empty(cls, names: Names = ()) -> Detections:
        """No detections (``len() == 0``) with the given class names."""
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64), names)

    @classmethod
    def unchecked(
        cls, xyxy: np.ndarray, confidence: np.ndarray, class_id: np.ndarray, names: Any
    ) -> Detections:
        """The fast path of post-processing (``y9deploy.post.host.batch_to_detections``, the Detector's frame plans
        of ``y9deploy.runtime.frame_plan``), whose arrays are already as the class holds them (xyxy float32 [N, 4],
        confidence float32 [N] in [0, 1], class_id int64 [N]: made by the runtime) and whose names passed the
        class's check once per model: nothing is validated or copied. Anything else: the constructor."""
        det = object.__new__(cls)
        object.__setattr__(det, "xyxy", xyxy)
        object.__setattr__(det, "confidence", confidence)
        object.__setattr__(det, "class_id", class_id)
        object.__setattr__(det, "names", names)
        return det

    @classmethod
    def from_rows(cls, rows: np.ndarray, names: Names = ()) -> Detections:
        """rows (ndarray[N, 6]): (x1, y1, x2, y2, score, class), e.g. one ``postprocess`` output."""
        arr = np.asarray(rows)
        if arr.ndim != 2 or arr.shape[1] != 6:
            raise ValueError(
                f"rows has shape {arr.shape}; expected (N, 6) rows of x1, y1, x2, y2, score, class."
            )
        return cls(arr[:, :4], arr[:, 4], arr[:, 5], names)

    # -- access ------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.xyxy.shape[0])

    def __getitem__(self, index: Any) -> Detections:
        """Select rows: a boolean mask ndarray[N], an int, a slice or an array of indices -> new Detections."""
        if isinstance(index, (int, np.integer)):
            n = len(self)
            if not -n <= index < n:
                raise IndexError(f"index {index} is out of range for {n} detections.")
            index = [int(index)]
        elif not isinstance(index, slice):
            index = np.asarray(index)
            if index.dtype == bool and index.shape != (len(self),):
                raise IndexError(f"boolean mask has shape {index.shape}; expected ({len(self)},).")
            if index.dtype != bool and index.size and not np.issubdtype(index.dtype, np.integer):
                raise IndexError(f"index has dtype {index.dtype}; expected a boolean mask, ints or a slice.")
            if index.dtype != bool:
                index = index.astype(np.int64)
        return Detections(self.xyxy[index], self.confidence[index], self.class_id[index], self.names)

    def __iter__(self):
        """Rows as ``(xyxy ndarray[4], confidence float, class_id int)``."""
        for i in range(len(self)):
            yield self.xyxy[i], float(self.confidence[i]), int(self.class_id[i])

    def __repr__(self) -> str:
        return f"Detections(n={len(self)}, classes={sorted(set(self.class_names))})"

    def name_of(self, class_id: int) -> str:
        """The name of a class id (``str(class_id)`` when ``names`` does not cover it)."""
        i = int(class_id)
        if isinstance(self.names, dict):
            return self.names.get(i, str(i))
        return self.names[i] if 0 <= i < len(self.names) else str(i)

    @property
    def class_names(self) -> list[str]:
        """The name of each detection's class (list of N str)."""
        return [self.name_of(c) for c in self.class_id]

    @property
    def area(self) -> np.ndarray:
        """ndarray[N] float32: box areas in frame pixels."""
        return (self.xyxy[:, 2] - self.xyxy[:, 0]) * (self.xyxy[:, 3] - self.xyxy[:, 1])

    # -- export ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: ``{"detections": [{"xyxy", "confidence", "class_id", "class_name"}], "names"}``."""
        names = (
            {str(k): v for k, v in self.names.items()} if isinstance(self.names, dict) else list(self.names)
        )
        dets = [
            {
                "xyxy": [float(v) for v in self.xyxy[i]],
                "confidence": float(self.confidence[i]),
                "class_id": int(self.class_id[i]),
                "class_name": self.name_of(self.class_id[i]),
            }
            for i in range(len(self))
        ]
        return {"detections": dets, "names": names}

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **kwargs)``."""
        return json.dumps(self.to_dict(), **kwargs)

    def to_coco(
        self, image_id: int | str, category_ids: Sequence[int] | Mapping[int, int] | None = None
    ) -> list[dict[str, Any]]:
        """Rows of the COCO results format: ``{"image_id", "category_id", "bbox": [x, y, w, h], "score"}``, one
        per detection, in frame pixels (what ``pycocotools``' ``loadRes`` and ``y9 predict --save-json`` take).

        Args:
            image_id: the image's id in the ground-truth file (COCO: an int).
            category_ids: class id -> category id (a list indexed by class id, or a dict), e.g. the 80 COCO
                classes to COCO's 91 category ids; None: the category id is the class id.
        Raises:
            ValueError: a class id that ``category_ids`` does not cover.
        """
        from y9core.evaluation.coco_results import coco_rows

        return coco_rows(self.xyxy, self.confidence, self.class_id, image_id, category_ids)

    def to_supervision(self) -> Any:
        """supervision's ``sv.Detections`` (the optional ``supervision`` package: ``pip install "y9[supervision]"``)
        with xyxy, confidence, class_id and the class names in ``data["class_name"]``, as supervision's own
        converters fill it."""
        sv = _import_supervision()
        return sv.Detections(
            xyxy=self.xyxy.copy(),
            confidence=self.confidence.copy(),
            class_id=self.class_id.copy(),
            data={"class_name": np.array(self.class_names, dtype=str)},
        )

    @classmethod
    def from_supervision(cls, detections: Any, names: Names | None = None) -> Detections:
        """A ``Detections`` from supervision's ``sv.Detections`` (boxes with confidence and class_id).

        Args:
            detections: an ``sv.Detections``.
            names: class names by id; None: read from ``data["class_name"]`` when supervision has them.
        Raises:
            ValueError: ``confidence`` or ``class_id`` is missing (None) in ``detections``.
        """
        for name in ("confidence", "class_id"):
            if getattr(detections, name, None) is None:
                raise ValueError(
                    f"the supervision Detections has no {name}; expected boxes with confidence and class_id."
                )
        if names is None:
            names = {}
            labels = getattr(detections, "data", {}).get("class_name")
            if labels is not None:
                names = _names_of(detections.class_id, labels)
        return cls(detections.xyxy, detections.confidence, detections.class_id, names)

    def annotate(self, frame: np.ndarray, **options: Any) -> np.ndarray:
        """An annotated COPY of ``frame`` (the frame these detections belong to): boxes and "name score"
        labels in a fixed colour per class (``y9deploy.draw.draw_detections``; ``options`` as there)."""
        from y9deploy.draw import draw_detections

        return draw_detections(frame, self, **options)


def _names_of(class_ids: Any, labels: Any) -> dict[int, str]:
    """``{class id: name}`` from supervision's per-box ``class_name``: the first name of each id; an id named two
    ways is said in one warning (one of its names would be dropped)."""
    names: dict[int, str] = {}
    for c, n in zip(class_ids, labels):
        first = names.setdefault(int(c), str(n))
        if first != str(n):
            warnings.warn(f"the supervision Detections names class {int(c)} both {quoted(first, 40)} and "
                          f"{quoted(str(n), 40)}; y9 keeps {quoted(first, 40)} (expected one name per class id: pass "
                          "names=... to choose).", FactsWarning, stacklevel=4)  # fmt: skip
            break
    return names


def _import_supervision() -> Any:
    try:
        import supervision
    except ImportError:
        raise BackendUnavailableError(
            "Detections.to_supervision needs the supervision package, which is not installed; install it with: "
            'pip install "y9[supervision]".'
        ) from None
    return supervision
