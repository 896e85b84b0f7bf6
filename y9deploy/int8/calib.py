"""The calibration set of an INT8 export: which train images of a data.yaml, their digest, and the reader that feeds
them to ONNX Runtime's calibrator, letterboxed as the Detector letterboxes a frame (``y9deploy.pre.host.prepare``).

The images are the first ``n`` of the train split in sorted path order (deterministic: the same data.yaml and ``n``
give the same set, hence the same digest). The digest is the sha256 over each image's file name and the sha256 of its
bytes, so renaming the folder keeps it and changing one image changes it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CalibrationSet:
    """``files``: the images (sorted), ``sha256``: their digest, ``data``: the data.yaml they came from."""

    data: Path
    files: tuple[Path, ...]
    sha256: str

    def __post_init__(self) -> None:
        if not self.files:
            raise ValueError(f"the calibration set of {self.data} is empty; expected at least one train image.")
        if len(self.sha256) != 64:
            raise ValueError(f"calibration digest {self.sha256!r} is not a sha256 (64 hex digits).")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def set_digest(files: list[Path]) -> str:
    """sha256 over ``name\\0sha256(bytes)\\n`` of each file, in the given order."""
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{_file_sha256(f)}\n".encode())
    return h.hexdigest()


def calibration_set(data: str | os.PathLike, n: int, split: str = "train") -> CalibrationSet:
    """The first ``n`` images (sorted paths) of ``split`` of the data.yaml ``data``; fewer when the split has fewer.
    A non-positive ``n`` or an empty split is one sentence."""
    from y9core.data.yaml_config import load_data_yaml

    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"calibration images n={n!r}; expected a positive number of {split} images.")
    cfg = load_data_yaml(data, require=(split,))
    files = sorted(Path(f) for f in cfg.image_files(split))
    if not files:
        raise ValueError(f"{data} lists no {split} images; expected images to calibrate the INT8 model on.")
    chosen = files[: int(n)]
    return CalibrationSet(Path(data), tuple(chosen), set_digest(chosen))


def calibration_blobs(files: tuple[Path, ...] | list[Path], imgsz: tuple[int, int], letterbox: Any) -> np.ndarray:
    """float32 [N, 3, H, W]: each image as the Detector feeds it (``letterbox``: the model's ``LetterboxRule``)."""
    from y9core.images.read import decode_image
    from y9deploy.pre.host import prepare

    out = np.empty((len(files), 3, *imgsz), dtype=np.float32)
    for i, f in enumerate(files):
        img = decode_image(f)  # an ImageFileError names the file and why
        blob, _ = prepare(img, imgsz, auto=False, scaleup=letterbox.scaleup, stride=letterbox.stride,
                          color=letterbox.color)  # fmt: skip
        out[i] = blob[0]
    return out


def make_reader(blobs: np.ndarray, batch: int = 1, input_name: str = "images") -> Any:
    """An ``onnxruntime.quantization.CalibrationDataReader`` yielding ``batch`` images per call (the last call's
    batch filled up with the first images again, for models of a static batch)."""
    from onnxruntime.quantization import CalibrationDataReader

    class _Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._i = 0

        def get_next(self) -> dict[str, np.ndarray] | None:
            if self._i >= len(blobs):
                return None
            idx = [(self._i + k) % len(blobs) for k in range(batch)]
            self._i += batch
            return {input_name: blobs[idx]}

        def rewind(self) -> None:
            self._i = 0

    return _Reader()
