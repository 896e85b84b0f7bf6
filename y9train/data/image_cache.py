"""The image cache: each image decoded once, resized so its long side is ``imgsz`` (as the letterbox
resizes it: same size rounding, ``cv2.INTER_LINEAR``), stored as a uint8 BGR array.

Modes:
- ``None``: decode and resize on every access (what the official loader does every epoch);
- ``"ram"``: all resized images held in the main process, built before the loader starts; DataLoader
  workers are forked and share these pages copy-on-write (on platforms that spawn workers, each worker
  gets a copy);
- ``"disk"``: one ``.npy`` per image under ``<images folder>.y9img<imgsz>/`` (or ``cache_dir`` /
  ``$Y9_CACHE_DIR``), named by a hash of the image's path, size, mtime, ``imgsz`` and decode mode (a changed
  file gets a new entry), read back memory-mapped and kept mapped per process: a JPEG is decoded once ever,
  later runs and epochs only map pages. An entry whose header or size is wrong (a file cut short, a flipped bit in
  its header) is rebuilt with a warning; one damaged after the build is decoded instead; an entry that cannot be
  written (a full disk) stops the run with an ``OSError`` naming it.

Training sets (``fast_decode``) decode JPEGs that shrink by 2x or more at 1/2, 1/4 or 1/8 size in libjpeg's
DCT domain before the final resize: the same size, less decoding work, and area-like rather than aliased
down-sampling. Validation sets keep the exact letterbox pixels (full decode + ``INTER_LINEAR``).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from y9core.data.paths import cache_location
from y9core.errors import DataError, ImageFileError
from y9core.files.append_file import named
from y9core.images.read import decode_image
from y9core.letterbox import letterbox_params

log = logging.getLogger("y9train.data")

CACHE_MODES = (None, "ram", "disk")
RAM_FRACTION = 0.8  # refuse a RAM cache needing more than this share of the available memory
MAX_OPEN_MAPS = 8192  # disk entries kept mapped per process (under the kernel's vm.max_map_count)


def resized_hw(hw: tuple[int, int], imgsz: int) -> tuple[int, int]:
    """(h, w) after scaling the long side to ``imgsz`` (the letterbox's rounding)."""
    _, (w, h), _, _ = letterbox_params(hw, imgsz)
    return h, w


# JPEG decoding with DCT-domain downscaling (libjpeg), by the largest factor the resize still shrinks by
_REDUCED = ((8, cv2.IMREAD_REDUCED_COLOR_8), (4, cv2.IMREAD_REDUCED_COLOR_4), (2, cv2.IMREAD_REDUCED_COLOR_2))
_JPEG = frozenset({".jpg", ".jpeg"})


def read_resized(
    path: Path, imgsz: int, *, src_hw: tuple[int, int] | None = None, fast: bool = False
) -> np.ndarray:
    """Decode an image and resize it so its long side is ``imgsz``.

    Args:
        src_hw: (h, w) of the source image when known (from the label scan).
        fast: for a JPEG shrunk by 2x or more (``src_hw`` given), decode at 1/2, 1/4 or 1/8 size in the DCT
            domain (less decoding work) before the final resize; same output size, slightly different pixels, so
            only for training (validation keeps the letterbox's exact pixels).
    Returns:
        ndarray[h, w, 3] uint8 BGR.
    Raises:
        DataError: the file cannot be decoded (it was readable when the labels were scanned).
    """
    flag = cv2.IMREAD_COLOR
    if fast and src_hw is not None and Path(path).suffix.lower() in _JPEG:
        h, w = resized_hw(src_hw, imgsz)
        shrink = min(src_hw[0] / h, src_hw[1] / w)
        flag = next((f for k, f in _REDUCED if shrink >= k), cv2.IMREAD_COLOR)
    try:  # the scan proved it decodes cleanly: only the header is checked again here (a file may have changed)
        img = decode_image(path, flag, corrupt_check=False)
    except ImageFileError as exc:
        raise DataError(
            f"Image {path} {exc.reason} now; expected the readable image seen at the scan."
        ) from None
    h, w = resized_hw(img.shape[:2] if flag == cv2.IMREAD_COLOR else src_hw, imgsz)
    if (h, w) != img.shape[:2]:
        img = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)
    return img


def entry_damage(path: Path, shape: tuple[int, int, int]) -> str:
    """Why a disk-cache entry cannot be used ("" when its header says uint8 ``shape`` and the file holds exactly
    that many bytes after it); a flipped bit among the pixels is not seen (it changes one pixel's value)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0  # fmt: skip
            got, fortran, dtype = read_header(f)
            offset = f.tell()
        size = path.stat().st_size
    except Exception as exc:  # whatever numpy makes of a damaged header, the entry is rebuilt
        return f"{type(exc).__name__}: {str(exc).strip()[:120]}"
    if tuple(got) != shape or dtype != np.uint8 or fortran:
        return f"it holds {dtype} {tuple(got)}, expected uint8 {shape}"
    if size != offset + int(np.prod(shape)):
        return f"it has {size} bytes, expected {offset + int(np.prod(shape))}"
    return ""


def _entry_name(path: Path, imgsz: int, fast: bool) -> str:
    st = path.stat()
    key = f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{imgsz}\0{int(fast)}"
    return f"{path.stem}-{hashlib.sha1(key.encode()).hexdigest()[:16]}.npy"


class ImageCache:
    """Resized uint8 images by index.

    Args:
        files: image paths (duplicates are cached once).
        shapes: ndarray[N, 2] ``(h, w)`` of the source images (from the label scan).
        imgsz: long side after resizing.
        mode: ``None``, ``"ram"`` or ``"disk"``.
        cache_dir: root of the disk cache (default beside the images folder).
        fast_decode: JPEG DCT-domain downscaled decoding (see ``read_resized``); for training sets.
        workers: threads decoding images while the cache is built.
    """

    def __init__(
        self,
        files: list[Path],
        shapes: np.ndarray,
        imgsz: int,
        mode: str | None = None,
        *,
        cache_dir: str | Path | None = None,
        workers: int = 8,
        fast_decode: bool = False,
    ):
        if mode not in CACHE_MODES:
            raise ValueError(f"Image cache mode {mode!r} is not supported; expected one of {CACHE_MODES}.")
        self.imgsz = int(imgsz)
        self.mode = mode
        unique = list(dict.fromkeys(files))
        pos = {p: i for i, p in enumerate(unique)}
        self.unique = unique
        self.slot = np.array([pos[p] for p in files], np.int64)  # index -> unique image
        src = {}
        for p, hw in zip(files, shapes):
            src.setdefault(p, (int(hw[0]), int(hw[1])))
        self._src_hw = [src[p] for p in unique]
        self.fast_decode = bool(fast_decode)
        self._workers = max(1, min(workers, os.cpu_count() or 1))
        self._ram: list[np.ndarray] | None = None
        self._disk: list[str] | None = None
        self.folder: Path | None = None  # the disk cache folder
        self._maps: OrderedDict[int, np.ndarray] = OrderedDict()  # open memory maps of this process
        if mode == "ram":
            need = self.nbytes(shapes, files)
            if not self._ram_fits(need):
                log.warning("the RAM image cache needs %.1f GB, more than is free; caching off", need / 1e9)
                self.mode = None
            else:
                self._ram = self._map(self._read, range(len(unique)))
        elif mode == "disk":
            self._disk = self._build_disk(cache_dir)

    def _read(self, u: int) -> np.ndarray:
        return read_resized(self.unique[u], self.imgsz, src_hw=self._src_hw[u], fast=self.fast_decode)

    def nbytes(self, shapes: np.ndarray, files: list[Path]) -> int:
        """Bytes the cache holds (each unique image once)."""
        first = {}
        for p, hw in zip(files, shapes):
            first.setdefault(p, hw)
        return int(sum(np.prod(resized_hw(tuple(hw), self.imgsz)) * 3 for hw in first.values()))

    @staticmethod
    def _ram_fits(need: int) -> bool:
        try:
            import psutil
        except ImportError:
            return True
        return need < RAM_FRACTION * psutil.virtual_memory().available

    def _map(self, fn, items=None) -> list:
        items = self.unique if items is None else items
        with ThreadPoolExecutor(self._workers) as pool:
            return list(pool.map(fn, items))

    def _build_disk(self, cache_dir) -> list[str]:
        """The entries of the disk cache, each written when missing or damaged (``entry_damage``).

        Raises:
            OSError naming the entry that cannot be written (a full disk, a read-only folder): ``cache="disk"``
            was asked for, so the run stops rather than going on without it.
        """
        folder = cache_location(
            self.unique[0].parent, f"{self.unique[0].parent.name}.y9img{self.imgsz}", cache_dir
        )
        entries = [folder / _entry_name(p, self.imgsz, self.fast_decode) for p in self.unique]

        def build(i: int) -> None:
            if entries[i].is_file():
                damage = entry_damage(entries[i], self._shape(i))
                if not damage:
                    return
                log.warning("the image cache entry %s is damaged (%s); rebuilding it", entries[i], damage)
            img = self._read(i)
            tmp = entries[i].with_name(entries[i].stem + f".tmp{os.getpid()}-{i}.npy")
            try:
                with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644), "wb") as f:
                    np.save(f, img)  # never through a link planted under the temporary's name
                os.replace(tmp, entries[i])
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise named(exc, entries[i]) from exc

        folder.mkdir(parents=True, exist_ok=True)
        self._map(build, range(len(entries)))
        self.folder = folder
        return [str(e) for e in entries]

    def _shape(self, u: int) -> tuple[int, int, int]:
        return (*resized_hw(self._src_hw[u], self.imgsz), 3)

    def __len__(self) -> int:
        return len(self.slot)

    def get(self, index: int) -> np.ndarray:
        """The resized image of ``index``: ndarray[h, w, 3] uint8 BGR (read-only for the disk cache)."""
        u = int(self.slot[index])
        if self._ram is not None:
            return self._ram[u]
        if self._disk is not None:
            m = self._maps.get(u)
            if m is None:  # map once per process: later reads of that image neither open nor fault
                try:
                    m = np.load(self._disk[u], mmap_mode="r")
                    if m.shape != self._shape(u) or m.dtype != np.uint8:
                        raise ValueError(f"it holds {m.dtype} {m.shape}, not uint8 {self._shape(u)}")
                except Exception as exc:  # damaged since the cache was built (EOFError, ValueError ...): decode
                    log.warning("the image cache entry %s is damaged (%s); decoding the image instead",
                                self._disk[u], exc)  # fmt: skip
                    return self._read(u)
                self._maps[u] = m
                if len(self._maps) > MAX_OPEN_MAPS:
                    self._maps.popitem(last=False)
            return m
        return self._read(u)
