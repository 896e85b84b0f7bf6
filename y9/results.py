"""``y9.Result``: one frame's detections with where they came from, what ``y9.Model.predict`` and ``.track`` return.

    for r in y9.Model("best.pt").predict("clip.mp4", stream=True):
        print(r.path, r.frame, r.orig_shape, len(r))    # source, frame index (None for an image), (h, w), count
        annotated = r.plot()                          # an annotated copy of r.orig_img (BGR)
        r.save("out/frame.jpg")                       # the annotated copy, written atomically
        r.to_json()                                   # the JSON line y9 predict writes to predictions.jsonl
        r.to_coco()                                   # COCO results rows (COCO's 91 category ids for COCO-80 models)
        r.to_supervision()                            # sv.Detections (tracker_id too when tracked)

The detections themselves are ``r.detections`` (``y9.Detections``: ``xyxy``, ``confidence``, ``class_id``,
``names``). Nothing here runs a model: a ``Result`` is a validated record plus its conversions, each delegated to
the one function the ``y9 predict`` files use (``frame_record``, ``coco_rows``, ``draw_detections``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from y9deploy.detections import Detections


@dataclass(frozen=True, eq=False)
class Result:
    """One frame's detections and their origin.

    Attributes:
        path: the source as given (an image or video path, a URL, a camera index; ``imageN`` for an in-memory image).
        frame: the frame index in a video, stream or camera (None: an image).
        orig_img (ndarray[H, W, 3] uint8 BGR): the frame the boxes are in (pixels of this image).
        detections: the frame's ``y9.Detections``.
        track_id (ndarray[N] int64 | None): each detection's track (-1: none) when tracked, else None.
        save_dir: the run folder the frame's outputs went to (``save=True``), else None.
    Raises (on construction): TypeError / ValueError, one sentence, for a wrong type or shape.
    """

    path: str
    frame: int | None
    orig_img: np.ndarray
    detections: Detections
    track_id: np.ndarray | None = None
    save_dir: Path | None = None
    folder: Any = field(default=None, repr=False)  # the predict call's RunFolder (y9.save_target): save()'s default
    speed: dict[str, float] = field(default_factory=dict, repr=False)  # ms per frame: preprocess, inference, postprocess

    def __post_init__(self) -> None:
        img = self.orig_img
        if not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            got = f"shape {img.shape} {img.dtype}" if isinstance(img, np.ndarray) else type(img).__name__
            raise ValueError(f"Result.orig_img is {got}; expected an ndarray[H, W, 3] uint8 BGR image.")
        if not isinstance(self.detections, Detections):
            raise TypeError(f"Result.detections is a {type(self.detections).__name__}; expected y9.Detections.")
        if self.track_id is not None:
            ids = np.asarray(self.track_id, np.int64).reshape(-1)
            if len(ids) != len(self.detections):
                raise ValueError(f"Result.track_id has {len(ids)} ids for {len(self.detections)} detections; "
                                 "expected one per detection.")  # fmt: skip
            object.__setattr__(self, "track_id", ids)
        object.__setattr__(self, "path", str(self.path))
        object.__setattr__(self, "frame", None if self.frame is None else int(self.frame))

    # -- what it is --------------------------------------------------------------------------------------
    @property
    def orig_shape(self) -> tuple[int, int]:
        """(h, w) of the frame."""
        return int(self.orig_img.shape[0]), int(self.orig_img.shape[1])

    @property
    def names(self) -> dict[int, str]:
        """Class names as ``{class id: name}`` (``r.names[int(c)]``)."""
        names = self.detections.names
        return dict(names) if isinstance(names, dict) else dict(enumerate(names))

    @property
    def boxes(self) -> Any:
        """``y9.boxes.Boxes``: ``xyxy``, ``xywh``, ``xyxyn``, ``xywhn``, ``conf``, ``cls``, ``id``, ``data``; rows by
        index and iteration. The same numbers as ``detections`` and ``track_id``."""
        from y9.boxes import Boxes

        return Boxes.of(self.detections, self.track_id, self.orig_shape)

    #: what YOLO tools' results hold for other tasks: a detection result has none
    masks = keypoints = probs = obb = None

    def show(self, *args: Any, **kwargs: Any) -> None:
        """Refused: y9 opens no windows."""
        raise TypeError("Result.show(): y9 opens no windows; cv2.imshow('y9', r.plot()) then cv2.waitKey(0) shows "
                        "the annotated frame, r.save() writes it.")  # fmt: skip

    def save_txt(self, txt_file: str | Path, save_conf: bool = False) -> Path:
        """Append one line per detection, ``class cx cy w h`` over the frame's size (`` conf`` with ``save_conf``),
        to ``txt_file`` (the YOLO label format); refused when it is the source."""
        from y9.save_target import refuse_source

        path = Path(txt_file)
        refuse_source(path, self.path)
        rows = self.boxes
        lines = []
        for cls, xywhn, conf in zip(rows.cls.tolist(), rows.xywhn.tolist(), rows.conf.tolist()):
            vals = [f"{int(cls)}", *(f"{v:.6g}" for v in xywhn)] + ([f"{conf:.6g}"] if save_conf else [])
            lines.append(" ".join(vals) + "\n")
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
        return path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from y9.keywords import missing_attribute

        raise missing_attribute("Result", name, [*dir(type(self)), *self.__dataclass_fields__])

    def cpu(self) -> Result:
        """The result itself (its arrays are numpy on the host): for code written for torch tensors."""
        return self

    def numpy(self) -> Result:
        return self

    def verbose(self) -> str:
        """The count per class, e.g. ``"2 persons, 1 bus, "`` (``"(no detections), "`` when none)."""
        if not len(self):
            return "(no detections), "
        ids, counts = np.unique(self.detections.class_id, return_counts=True)
        return "".join(f"{n} {self.detections.name_of(c)}{'s' * (n > 1)}, " for c, n in zip(ids.tolist(),
                                                                                        counts.tolist()))

    def summary(self, normalize: bool = False, decimals: int = 5) -> list[dict[str, Any]]:
        """One dict per detection: ``name``, ``class``, ``confidence``, ``box`` {x1, y1, x2, y2} (over the frame's
        size with ``normalize``), ``track_id`` when tracked."""
        h, w = self.orig_shape
        scale = np.array([w, h, w, h], np.float64) if normalize else np.ones(4)
        rows = []
        for i, (box, conf, cls) in enumerate(self.detections):
            x1, y1, x2, y2 = (np.asarray(box, np.float64) / scale).round(decimals).tolist()
            row = {"name": self.detections.name_of(cls), "class": cls, "confidence": round(conf, decimals),
                   "box": {"x1": x1, "y1": y1, "x2": x2, "y2": y2}}  # fmt: skip
            if self.track_id is not None:
                row["track_id"] = int(self.track_id[i])
            rows.append(row)
        return rows

    def __len__(self) -> int:
        return len(self.detections)

    def __repr__(self) -> str:
        where = self.path if self.frame is None else f"{self.path} frame {self.frame}"
        h, w = self.orig_shape
        tracked = ", tracked" if self.track_id is not None else ""
        return f"Result({where}, {h}x{w}, {len(self)} detections{tracked})"

    @property
    def stem(self) -> str:
        """The name the frame's files get: the source's stem, with ``_<frame>`` for video frames."""
        stem = Path(self.path.split("?", 1)[0]).stem or "image"
        return stem if self.frame is None else f"{stem}_{self.frame}"

    # -- pictures ----------------------------------------------------------------------------------------
    def plot(self, **options: Any) -> np.ndarray:
        """An annotated COPY of ``orig_img``: boxes and "name score" labels (``#id`` first when tracked), one fixed
        colour per class (``y9deploy.draw.draw_detections``; ``options`` as there: ``thickness``, ``font_scale``,
        ``show_labels``, ``show_scores``, or by YOLO tools' names: ``line_width``, ``font_size``, ``labels``,
        ``conf``, ``boxes``; ``y9.keywords.draw_options``)."""
        from y9.keywords import draw_options
        from y9deploy.draw import draw_detections

        options = draw_options(options)
        if options.pop("boxes", True) is False:
            return self.orig_img.copy()

        if self.track_id is None:
            return draw_detections(self.orig_img, self.detections, **options)
        import cv2

        out = draw_detections(self.orig_img, self.detections, **{**options, "show_labels": False})
        for box, tid in zip(self.detections.xyxy, self.track_id.tolist()):
            if tid >= 0:
                x, y = int(box[0]) + 2, int(box[3]) - 4
                cv2.putText(out, f"#{tid}", (x, max(10, y)), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1,
                            cv2.LINE_AA)  # fmt: skip
        return out

    def save(self, filename: str | Path | None = None, **options: Any) -> Path:
        """Write ``plot()`` to ``filename``, atomically; returns the path. ``options`` as ``plot``.

        Without ``filename``: ``<stem>.jpg`` in ``save_dir``, else in the run folder of the ``predict`` call
        (``runs/predict[N]``, made on the first save), never over a file y9 did not write (``<stem>_1.jpg`` ...:
        ``y9.save_target``). Raises OutputError (one sentence) for a path that is the source image."""
        from y9.save_target import RunFolder, default_target, refuse_source, remember
        from y9core.images.write import write_image

        if filename is None:
            folder = self.save_dir or (self.folder or RunFolder()).path
            path = default_target(Path(folder), self.stem, self.path)
        else:
            path = Path(filename)
            refuse_source(path, self.path)
        write_image(path, self.plot(**options))
        remember(path)
        return path

    # -- data --------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The frame's record as ``y9 predict`` writes it to predictions.jsonl: ``{"source", "frame",
        "detections": [{"xyxy", "confidence", "class_id", "class_name"(, "track_id")}]}`` plus ``"shape": [h, w]``."""
        from y9deploy.pipelines.predict.results import frame_record

        rec = frame_record(self.path, self.frame, self.detections, track_id=self.track_id)
        rec["shape"] = list(self.orig_shape)
        return rec

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **kwargs)``."""
        return json.dumps(self.to_dict(), **kwargs)

    def to_coco(self, image_id: int | str | None = None, category_ids: Any = "auto") -> list[dict[str, Any]]:
        """COCO results rows ``{"image_id", "category_id", "bbox": [x, y, w, h], "score"}`` in frame pixels.

        Args:
            image_id: default the file stem's number when it is one (COCO's 000000000139.jpg -> 139), else the stem.
            category_ids: class id -> category id; "auto": COCO's 91 category ids when the model's classes are the
                80 COCO classes (``y9core.evaluation.coco_categories``), else the class id; None: the class id.
        """
        from y9core.evaluation.coco_categories import category_ids_for
        from y9core.evaluation.coco_results import coco_image_id

        if image_id is None:
            image_id = coco_image_id(self.stem)
        if isinstance(category_ids, str) and category_ids == "auto":
            category_ids = category_ids_for(self.detections.names)
        return self.detections.to_coco(image_id, category_ids)

    def to_supervision(self) -> Any:
        """supervision's ``sv.Detections`` of the frame (``Detections.to_supervision``), with ``tracker_id`` when
        tracked (-1 where a detection has no track)."""
        out = self.detections.to_supervision()
        if self.track_id is not None:
            out.tracker_id = self.track_id.copy()
        return out
