"""``Result.boxes``: one frame's detections read as YOLO users read them, on numpy (no torch needed).

    for r in model.predict("bus.jpg"):
        r.boxes.xyxy, r.boxes.conf, r.boxes.cls, r.boxes.id      # ndarray[N, 4], [N], [N] (float), [N] or None
        for box in r.boxes:                                       # one row at a time: box.xyxy[0], int(box.cls)
            print(r.names[int(box.cls)], float(box.conf), box.xyxy[0].tolist())
        r.boxes.xyxy.cpu().numpy()                                # the torch idioms: the same array

The arrays are ``BoxArray`` (an ndarray with ``.cpu()``, ``.numpy()``, ``.cuda()`` returning the array itself and
``int()`` / ``float()`` of a one-element array), views of the same numbers as ``Result.detections`` and
``Result.track_id``, which y9's own code reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class BoxArray(np.ndarray):
    """An ndarray that answers the calls code written for torch tensors makes on results."""

    def cpu(self) -> BoxArray:
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> BoxArray:
        return self  # numpy results stay on the host

    def to(self, *args: Any, **kwargs: Any) -> BoxArray:
        return self

    def numpy(self) -> np.ndarray:
        return self.view(np.ndarray)

    def clone(self) -> BoxArray:
        return self.copy()

    def int(self) -> BoxArray:
        """Whole numbers (torch's ``.int()``: ``boxes.id.int().tolist()``)."""
        return self.astype(np.int64)

    def long(self) -> BoxArray:
        return self.astype(np.int64)

    def float(self) -> BoxArray:
        return self.astype(np.float32)

    def detach(self) -> BoxArray:
        return self

    def __int__(self) -> int:
        return int(self.view(np.ndarray).reshape(-1)[0]) if self.size == 1 else int(self.view(np.ndarray))

    def __float__(self) -> float:
        return float(self.view(np.ndarray).reshape(-1)[0]) if self.size == 1 else float(self.view(np.ndarray))

    def __index__(self) -> int:
        if self.size != 1 or not np.issubdtype(self.dtype, np.integer):
            raise TypeError(f"only an integer array of one element is an index; this is {self.shape} {self.dtype}.")
        return int(self)


def _wrap(values: np.ndarray) -> BoxArray:
    return np.asarray(values).view(BoxArray)


class Boxes:
    """The boxes of one frame.

    Attributes (``BoxArray``): ``xyxy`` [N, 4] frame pixels; ``conf`` [N]; ``cls`` [N] class ids as floats;
    ``id`` [N] track ids as floats (None when not tracked; -1: no track yet); ``xywh`` [N, 4] centre, size;
    ``xyxyn`` / ``xywhn`` the same over the frame's width and height; ``data`` [N, 6] (x1, y1, x2, y2, conf, cls)
    or [N, 7] with the track id before conf. ``orig_shape`` (h, w); ``is_track``; ``shape``.
    """

    def __init__(self, xyxy: np.ndarray, conf: np.ndarray, cls: np.ndarray, track_id: np.ndarray | None,
                 orig_shape: tuple[int, int]) -> None:  # fmt: skip
        self._xyxy = np.asarray(xyxy, np.float32).reshape(-1, 4)
        self._conf = np.asarray(conf, np.float32).reshape(-1)
        self._cls = np.asarray(cls).reshape(-1).astype(np.float32)
        self._id = None if track_id is None else np.asarray(track_id).reshape(-1).astype(np.float32)
        self.orig_shape = (int(orig_shape[0]), int(orig_shape[1]))

    @classmethod
    def of(cls, detections: Any, track_id: np.ndarray | None, orig_shape: tuple[int, int]) -> Boxes:
        return cls(detections.xyxy, detections.confidence, detections.class_id, track_id, orig_shape)

    # -- the arrays --------------------------------------------------------------------------------------
    @property
    def xyxy(self) -> BoxArray:
        return _wrap(self._xyxy)

    @property
    def conf(self) -> BoxArray:
        return _wrap(self._conf)

    @property
    def cls(self) -> BoxArray:
        return _wrap(self._cls)

    @property
    def id(self) -> BoxArray | None:
        return None if self._id is None else _wrap(self._id)

    @property
    def is_track(self) -> bool:
        return self._id is not None

    @property
    def xywh(self) -> BoxArray:
        b = self._xyxy
        out = np.empty_like(b)
        out[:, 0] = (b[:, 0] + b[:, 2]) / 2
        out[:, 1] = (b[:, 1] + b[:, 3]) / 2
        out[:, 2] = b[:, 2] - b[:, 0]
        out[:, 3] = b[:, 3] - b[:, 1]
        return _wrap(out)

    def _over_frame(self, boxes: np.ndarray) -> BoxArray:
        h, w = self.orig_shape
        return _wrap(boxes / np.array([w, h, w, h], np.float32))

    @property
    def xyxyn(self) -> BoxArray:
        return self._over_frame(self._xyxy)

    @property
    def xywhn(self) -> BoxArray:
        return self._over_frame(np.asarray(self.xywh))

    @property
    def data(self) -> BoxArray:
        cols = [self._xyxy] + ([self._id[:, None]] if self._id is not None else [])
        return _wrap(np.concatenate(cols + [self._conf[:, None], self._cls[:, None]], axis=1))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    # -- as a sequence -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._conf)

    def __getitem__(self, index: Any) -> Boxes:
        """Rows by int, slice, index array or boolean mask -> ``Boxes`` (an int keeps a leading axis of one)."""
        if isinstance(index, (int, np.integer)):
            n = len(self)
            if not -n <= int(index) < n:
                raise IndexError(f"box {int(index)} is out of range for {n} boxes.")
            index = [int(index)]
        index = np.asarray(index) if not isinstance(index, slice) else index
        track = None if self._id is None else self._id[index]
        return Boxes(self._xyxy[index], self._conf[index], self._cls[index], track, self.orig_shape)

    def __iter__(self):
        """One ``Boxes`` of one row per step (``box.xyxy[0]``, ``int(box.cls)``, ``float(box.conf)``)."""
        for i in range(len(self)):
            yield self[i]

    # -- the torch idioms (the arrays are numpy already) -------------------------------------------------
    def cpu(self) -> Boxes:
        return self

    def numpy(self) -> Boxes:
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> Boxes:
        return self

    def to(self, *args: Any, **kwargs: Any) -> Boxes:
        return self

    def tolist(self) -> list[list[float]]:
        return self.data.tolist()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from y9.keywords import missing_attribute

        raise missing_attribute("Boxes", name, [*dir(type(self)), "orig_shape"])

    def __repr__(self) -> str:
        return f"Boxes(n={len(self)}, orig_shape={self.orig_shape}, tracked={self.is_track})"
