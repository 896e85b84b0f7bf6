"""VisDrone-DET annotations -> YOLO format with a data.yaml.

A VisDrone-DET split folder holds ``images/*.jpg`` and ``annotations/*.txt``; each annotation line is
``x,y,w,h,score,category,truncation,occlusion`` in pixels (x, y the top-left corner). Category 0 (ignored
regions) and 11 (others) are dropped; categories 1..10 become classes 0..9. Boxes are clipped to the image;
boxes with nothing left are dropped.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from y9core.data.paths import IMAGE_SUFFIXES
from y9core.errors import DataError, ImageFileError
from y9core.files.atomic_write import atomic_write
from y9core.images.read import check_image_file

VISDRONE_NAMES = [
    "pedestrian",
    "people",
    "bicycle",
    "car",
    "van",
    "truck",
    "tricycle",
    "awning-tricycle",
    "bus",
    "motor",
]
IGNORED, OTHERS = 0, 11
LINK_MODES = ("hard", "copy", "symlink")


@dataclass
class ConvertResult:
    """What a conversion wrote: ``images`` per split, ``boxes`` kept, and the dropped counts by reason."""

    dst: Path
    data_yaml: Path
    images: dict[str, int] = field(default_factory=dict)
    boxes: int = 0
    dropped_ignored: int = 0
    dropped_others: int = 0
    dropped_empty: int = 0


def convert_line(
    line: str, width: int, height: int, where: str
) -> tuple[int, float, float, float, float] | int:
    """One annotation line -> ``(class, cx, cy, w, h)`` normalised, or the VisDrone category when it is dropped
    (0 ignored, 11 others, -1 nothing left after clipping).

    Raises:
        DataError: fewer than 6 fields, non-numbers, or a category outside 0..11 (``where`` names file:line).
    """
    fields = [f.strip() for f in line.strip().split(",")]
    fields = [f for f in fields if f != ""]
    if len(fields) < 6:
        raise DataError(
            f"VisDrone annotation {where} has {len(fields)} fields ({line.strip()!r}); expected "
            "x,y,w,h,score,category,truncation,occlusion."
        )
    try:
        x, y, w, h = (float(v) for v in fields[:4])
        category = int(fields[5])
    except ValueError:
        raise DataError(
            f"VisDrone annotation {where} has a non-number in {line.strip()!r}; expected numbers."
        ) from None
    if category in (IGNORED, OTHERS):
        return category
    if not 1 <= category <= 10:
        raise DataError(f"VisDrone annotation {where} has category {category}; expected an integer in 0..11.")
    x1, y1 = max(x, 0.0), max(y, 0.0)
    x2, y2 = min(x + w, float(width)), min(y + h, float(height))
    if x2 <= x1 or y2 <= y1:
        return -1
    return category - 1, (x1 + x2) / 2 / width, (y1 + y2) / 2 / height, (x2 - x1) / width, (y2 - y1) / height


def _split_name(folder: Path) -> str:
    name = folder.name.lower()
    for split in ("train", "val", "test"):
        if split in name:
            return split
    return "train"


def _find_splits(src: Path) -> list[Path]:
    if (src / "images").is_dir() and (src / "annotations").is_dir():
        return [src]
    found = sorted(p for p in src.iterdir() if (p / "images").is_dir() and (p / "annotations").is_dir())
    if not found:
        raise DataError(
            f"VisDrone folder {src} has no images/ and annotations/ folders (nor subfolders holding them); "
            "expected a VisDrone-DET split such as VisDrone2019-DET-train."
        )
    return found


def _place(src: Path, dst: Path, link: str) -> None:
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    if link == "symlink":
        dst.symlink_to(src.resolve())
        return
    if link == "hard":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass  # another filesystem: copy
    shutil.copy2(src, dst)


def convert_visdrone(
    src: str | Path, dst: str | Path, *, link: str = "hard", workers: int = 8
) -> ConvertResult:
    """Convert VisDrone-DET split folder(s) under ``src`` into ``dst/images/<split>``, ``dst/labels/<split>`` and
    ``dst/data.yaml``.

    Args:
        src: one split folder (``images/``, ``annotations/``) or a folder of split folders.
        link: how images reach ``dst``: ``"hard"`` links (copy across filesystems), ``"copy"``, ``"symlink"``.
    """
    if link not in LINK_MODES:
        raise ValueError(f"link={link!r} is not supported; expected one of {LINK_MODES}.")
    src, dst = Path(src).expanduser(), Path(dst).expanduser()
    if not src.is_dir():
        raise DataError(f"VisDrone folder {src} does not exist; expected a VisDrone-DET split folder.")
    result = ConvertResult(dst=dst, data_yaml=dst / "data.yaml")
    for folder in _find_splits(src):
        split = _split_name(folder)
        img_out, lab_out = dst / "images" / split, dst / "labels" / split
        img_out.mkdir(parents=True, exist_ok=True)
        lab_out.mkdir(parents=True, exist_ok=True)
        images = sorted(p for p in (folder / "images").iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)

        def size_of(p: Path) -> tuple[tuple[int, int] | None, str]:
            try:  # the size as decoded (after the EXIF orientation), from the header: nothing is decoded
                return check_image_file(p).shown_hw, ""
            except ImageFileError as exc:
                return None, exc.reason

        with ThreadPoolExecutor(max(1, min(workers, os.cpu_count() or 1))) as pool:
            sizes = list(pool.map(size_of, images))
        for image, (hw, why) in zip(images, sizes):
            if hw is None:
                raise DataError(f"VisDrone image {image} {why}; expected a readable image.")
            ann = folder / "annotations" / f"{image.stem}.txt"
            _place(image, img_out / image.name, link)
            result.images[split] = result.images.get(split, 0) + 1
            if not ann.is_file():
                continue  # a background image
            lines = []
            for lineno, line in enumerate(ann.read_text().splitlines(), start=1):
                if not line.strip():
                    continue
                out = convert_line(line, hw[1], hw[0], f"{ann}:{lineno}")
                if isinstance(out, int):
                    if out == IGNORED:
                        result.dropped_ignored += 1
                    elif out == OTHERS:
                        result.dropped_others += 1
                    else:
                        result.dropped_empty += 1
                    continue
                cls, cx, cy, bw, bh = out
                lines.append(f"{cls} {cx:.6f} {cy:.6f} {bw:.6f} {bh:.6f}")
            result.boxes += len(lines)
            atomic_write(lab_out / f"{image.stem}.txt", "".join(f"{s}\n" for s in lines), durable=False)
    data = {"path": ".", **{s: f"images/{s}" for s in ("train", "val", "test") if s in result.images}}
    data.update(nc=len(VISDRONE_NAMES), names=dict(enumerate(VISDRONE_NAMES)))
    atomic_write(result.data_yaml, yaml.safe_dump(data, sort_keys=False))  # an OSError names the file
    return result
