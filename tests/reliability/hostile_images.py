"""Hostile image files built from real encodes (OpenCV), shared by the reliability tests and
benchmarks/bench_faults.py: decompression bombs, EXIF orientations, cut and corrupt files."""

from __future__ import annotations

import struct
import zlib

import cv2
import numpy as np


def jpeg(h: int = 48, w: int = 64, *, seed: int = 0, **params: int) -> bytes:
    """A real JPEG of random pixels (``params``: OpenCV imwrite flags by name, e.g. IMWRITE_JPEG_PROGRESSIVE=1)."""
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    flags = [v for k, x in params.items() for v in (getattr(cv2, k), x)]
    ok, buf = cv2.imencode(".jpg", img, flags)
    assert ok
    return buf.tobytes()


def jpeg_bomb(width: int, height: int) -> bytes:
    """A small real JPEG whose frame header (SOF0) claims ``width`` x ``height`` pixels: the decompression bomb
    of issue 34 (631 bytes claiming 60000 x 60000 there; about as small here)."""
    data = bytearray(jpeg(8, 8))
    sof = data.find(b"\xff\xc0")
    assert sof > 0
    data[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def png_bomb(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` (CRC fixed so the header is valid)."""
    data = bytearray(cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))[1].tobytes())
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


def exif_tiff(orientation: int) -> bytes:
    """A big-endian TIFF structure whose IFD0 holds only the Orientation tag (an EXIF block)."""
    entry = struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0)
    return b"MM\x00\x2a" + struct.pack(">IH", 8, 1) + entry + struct.pack(">I", 0)


def with_exif_orientation(jpeg_bytes: bytes, orientation: int) -> bytes:
    """``jpeg_bytes`` with an ``Exif`` APP1 segment declaring ``orientation`` right after the SOI marker."""
    body = b"Exif\x00\x00" + exif_tiff(orientation)
    return jpeg_bytes[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + jpeg_bytes[2:]


def png_with_exif_orientation(png_bytes: bytes, orientation: int) -> bytes:
    """``png_bytes`` with an ``eXIf`` chunk declaring ``orientation`` right after IHDR."""
    body = exif_tiff(orientation)
    chunk = struct.pack(">I", len(body)) + b"eXIf" + body + struct.pack(">I", zlib.crc32(b"eXIf" + body))
    return png_bytes[:33] + chunk + png_bytes[33:]


def scrambled_jpeg(src: bytes) -> bytes:
    """Corrupt entropy-coded data in the middle of ``src`` with its end marker intact: OpenCV still returns a
    picture and libjpeg only prints "Corrupt JPEG data" on stderr."""
    data = bytearray(src)
    mid = len(src) // 2
    data[mid : mid + 2000] = bytes((b * 7 + 3) & 0xFF for b in data[mid : mid + 2000])
    return bytes(data)
