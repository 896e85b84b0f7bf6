"""The options of ``y9.Model``'s actions, checked at the door: a wrong name or value is one sentence.

``PredictOptions`` holds what ``Model.predict`` / ``Model.track`` take (the options of ``y9 predict``, by their
Python names); ``check_options`` checks the keyword options of ``val``, ``export`` and ``benchmark`` against the
library function each one calls, so ``Model.export(check=False)`` is what ``y9 export --no-check`` is and
``Model.export(chek=False)`` says which names exist.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


def _unknown(action: str, name: str, allowed: Iterable[str]) -> TypeError:
    allowed = sorted(allowed)
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(f"{action}() has no option {name!r}{hint}; expected one of: {', '.join(allowed)}.")


def check_options(action: str, options: Mapping[str, Any], *functions: Callable[..., Any],
                  drop: Iterable[str] = (), extra: Iterable[str] = ()) -> dict[str, Any]:  # fmt: skip
    """``options`` when every name is a keyword parameter of one of ``functions`` (less ``drop``, plus ``extra``);
    else TypeError, one sentence naming the option and the ones that exist."""
    allowed: set[str] = set(extra)
    for fn in functions:
        params = inspect.signature(fn).parameters.values()
        allowed |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    allowed -= set(drop)
    for name in options:
        if name not in allowed:
            raise _unknown(action, name, allowed)
    return dict(options)


def _fraction(name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, (int, float)) and 0.0 <= float(value) <= 1.0):
        raise ValueError(f"{name}={value!r}; expected a number from 0 to 1.")


def _at_least(name: str, value: Any, low: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
        raise ValueError(f"{name}={value!r}; expected a whole number of at least {low}.")


@dataclass(frozen=True)
class PredictOptions:
    """The options of ``Model.predict`` and ``Model.track`` (those of ``y9 predict``; None: the model's default).

    Detection: ``conf``, ``iou``, ``max_det``, ``classes`` (names or ids), ``class_conf`` ({class: threshold}),
    ``device``, ``imgsz`` (.pt checkpoints). Reading: ``batch``, ``vid_stride``, ``max_frames``, ``policy``
    ("latest" or "queue"). Tiling: ``tile`` (pixels), ``overlap``. With ``save=True``: ``project``, ``name``,
    ``exist_ok`` (the run folder, as ``y9 predict``), ``save_txt``, ``save_conf``, ``save_crop``, ``save_json``,
    ``save_images`` (annotated copies; default on). YOLO tools' names: ``agnostic_nms``, ``half``, ``verbose`` (one
    line per frame), ``line_width``, ``show_labels``, ``show_conf`` (the annotated copies),
    ``stream_buffer`` (True: ``policy='queue'``, False: 'latest'). ``imgsz``: ``y9.imgsz_rule``.
    """

    conf: float | None = None
    iou: float | None = None
    max_det: int | None = None
    classes: Any = None
    class_conf: Mapping[Any, float] | None = None
    device: str | int | None = None
    imgsz: int | tuple[int, int] | None = None
    batch: int = 1
    vid_stride: int = 1
    max_frames: int | None = None
    policy: str | None = None
    tile: int | None = None
    overlap: float = 0.2
    project: str | Path | None = None
    name: str | None = None
    exist_ok: bool = False
    save_txt: bool = False
    save_conf: bool = False
    save_crop: bool = False
    save_json: bool = False
    save_images: bool = True
    # YOLO tools' names (docs/from-ultralytics.md)
    agnostic_nms: bool = False
    half: bool | None = None
    verbose: bool = False
    line_width: int | None = None
    show_labels: bool = True
    show_conf: bool = True
    stream_buffer: bool | None = None

    def __post_init__(self) -> None:
        from y9.imgsz_rule import check_imgsz
        from y9.keywords import check_bool

        _fraction("conf", self.conf)
        _fraction("iou", self.iou)
        _fraction("overlap", self.overlap)
        for name, low in (("max_det", 1), ("batch", 1), ("vid_stride", 1), ("max_frames", 1), ("tile", 32),
                          ("line_width", 1)):  # fmt: skip
            _at_least(name, getattr(self, name), low)
        object.__setattr__(self, "imgsz", check_imgsz("predict", self.imgsz))
        for name in ("exist_ok", "save_txt", "save_conf", "save_crop", "save_json", "save_images", "agnostic_nms",
                     "verbose", "show_labels", "show_conf"):  # fmt: skip
            check_bool("predict", name, getattr(self, name))
        for name in ("half", "stream_buffer"):
            if getattr(self, name) is not None:
                check_bool("predict", name, getattr(self, name))
        if self.stream_buffer is not None and self.policy is None:  # YOLO tools' name for the reading policy
            object.__setattr__(self, "policy", "queue" if self.stream_buffer else "latest")
        if self.policy not in (None, "latest", "queue"):
            raise ValueError(f"policy={self.policy!r}; expected 'latest', 'queue' or None (by source).")
        if isinstance(self.classes, (str, int)):
            object.__setattr__(self, "classes", [self.classes])

    @classmethod
    def from_kwargs(cls, action: str, options: Mapping[str, Any]) -> PredictOptions:
        """The options of a call (TypeError, one sentence, for a name that is not one)."""
        from y9.keywords import lacking

        names = {f.name for f in fields(cls)}
        for name in options:
            if name not in names:
                raise lacking(action, name, names)
        return cls(**options)

    def draw(self) -> dict[str, Any]:
        """``draw_detections``' options of the annotated copies (``line_width``, ``show_labels``, ``show_conf``)."""
        return {"thickness": self.line_width, "show_labels": self.show_labels, "show_scores": self.show_conf}

    @property
    def saves_files(self) -> bool:
        """Label files, crops or COCO rows were asked for."""
        return self.save_txt or self.save_conf or self.save_crop or self.save_json

    def source_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``predict_source`` (less the model, the folder and the callbacks)."""
        from y9deploy.pipelines.predict.files import SaveOptions
        from y9deploy.pipelines.tiling import TileOptions

        tile = TileOptions(tile=self.tile, overlap=self.overlap) if self.tile is not None else None
        save = SaveOptions(txt=self.save_txt, conf=self.save_conf, crop=self.save_crop, coco_json=self.save_json)
        return dict(conf=self.conf, iou=self.iou, max_det=self.max_det, classes=self.classes,
                    class_conf=dict(self.class_conf) if self.class_conf else None, vid_stride=self.vid_stride,
                    save_images=self.save_images, batch=self.batch, tile=tile, policy=self.policy,
                    max_frames=self.max_frames, save=save, draw=self.draw())  # fmt: skip
