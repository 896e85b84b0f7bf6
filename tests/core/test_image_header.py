"""y9core.images.header against OpenCV: the size and orientation read from the header bytes are what OpenCV decodes,
for every format y9 reads; a cut or scrambled header is a HeaderError or None, never another exception; hostile
headers are bounded."""

from __future__ import annotations

import contextlib
import io
import struct

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from tests.reliability.hostile_images import exif_tiff, jpeg, png_with_exif_orientation, with_exif_orientation
from y9core.images.header import MAX_SEGMENTS, HeaderError, read_header

ENCODINGS = [
    (".jpg", []),
    (".jpg", [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]),
    (".png", []),
    (".bmp", []),
    (".webp", []),  # lossless (VP8L)
    (".webp", [cv2.IMWRITE_WEBP_QUALITY, 80]),  # lossy (VP8)
    (".tiff", []),
]


def header_of(data: bytes):
    return read_header(io.BytesIO(data))


@pytest.mark.parametrize("suffix,flags", ENCODINGS)
@pytest.mark.parametrize("hw,channels", [((37, 91), 3), ((300, 7), 3), ((64, 64), 1)])
def test_size_is_what_opencv_decodes(suffix, flags, hw, channels):
    img = np.random.default_rng(1).integers(0, 256, (*hw, channels), dtype=np.uint8).squeeze()
    data = cv2.imencode(suffix, img, flags)[1].tobytes()
    header = header_of(data)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert header.shown_hw == decoded.shape[:2] == hw and header.orientation == 1


def test_real_photos_and_sixteen_bit_png():
    for path in sorted(TEST_DATA.glob("*.jpg")):
        with open(path, "rb") as f:
            assert read_header(f).shown_hw == cv2.imread(str(path)).shape[:2]
    deep = cv2.imencode(".png", np.zeros((23, 45), np.uint16))[1].tobytes()
    assert header_of(deep).shown_hw == (23, 45)


def _webp_with_exif(orientation: int) -> bytes:
    vp8 = cv2.imencode(".webp", np.zeros((40, 80, 3), np.uint8), [cv2.IMWRITE_WEBP_QUALITY, 80])[1].tobytes()[
        12:
    ]
    block = exif_tiff(orientation)
    exif = b"EXIF" + struct.pack("<I", len(block)) + block + b"\x00" * (len(block) & 1)
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes([0x08, 0, 0, 0]) + (79).to_bytes(3, "little") + \
        (39).to_bytes(3, "little")  # fmt: skip
    body = b"WEBP" + vp8x + vp8 + exif
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _tiff_with_orientation(orientation: int) -> bytes:
    data = bytearray(cv2.imencode(".tiff", np.zeros((40, 80, 3), np.uint8))[1].tobytes())
    (ifd,) = struct.unpack("<I", data[4:8])
    (n,) = struct.unpack("<H", data[ifd : ifd + 2])
    entries = [data[ifd + 2 + 12 * k : ifd + 14 + 12 * k] for k in range(n)]
    entries.append(struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0))
    entries.sort(key=lambda e: struct.unpack("<H", e[:2])[0])
    new = len(data)
    data += struct.pack("<H", len(entries)) + b"".join(entries) + struct.pack("<I", 0)
    data[4:8] = struct.pack("<I", new)
    return bytes(data)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_of_each_format_is_what_opencv_applies(orientation):
    img = np.zeros((40, 80, 3), np.uint8)
    files = {
        "JPEG": with_exif_orientation(jpeg(40, 80), orientation),
        "PNG": png_with_exif_orientation(cv2.imencode(".png", img)[1].tobytes(), orientation),
        "WebP": _webp_with_exif(orientation),
        "TIFF": _tiff_with_orientation(orientation),
    }
    for fmt, data in files.items():
        header = header_of(data)
        decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert (header.format, header.orientation) == (fmt, orientation)
        assert header.shown_hw == decoded.shape[:2], (fmt, orientation)
        assert header.turned == (decoded.shape[:2] == (80, 40))


@pytest.mark.parametrize("suffix,flags", ENCODINGS)
def test_every_cut_of_a_header_is_a_header_error_or_none(suffix, flags):
    data = cv2.imencode(suffix, np.zeros((20, 30, 3), np.uint8), flags)[1].tobytes()
    data = with_exif_orientation(data, 6) if suffix == ".jpg" else data
    for n in range(0, min(len(data), 400)):
        try:
            header = header_of(data[:n])
        except HeaderError:
            continue
        assert header is None or header.shown_hw in ((20, 30), (30, 20)), (n, header)


@pytest.mark.parametrize("suffix,flags", ENCODINGS)
def test_scrambled_headers_never_raise_anything_else(suffix, flags):
    data = cv2.imencode(suffix, np.zeros((20, 30, 3), np.uint8), flags)[1].tobytes()
    rng = np.random.default_rng(0)
    for _ in range(300):
        mutated = bytearray(data)
        for at in rng.integers(0, min(len(data), 200), 3):
            mutated[at] = int(rng.integers(0, 256))
        with contextlib.suppress(HeaderError):  # or a header, or None: nothing else
            header_of(bytes(mutated))


def test_endless_segments_are_bounded():
    comment = b"\xff\xfe\x00\x04ab"
    data = b"\xff\xd8" + comment * (MAX_SEGMENTS + 10) + b"\xff\xc0" + b"\x00" * 20
    with pytest.raises(HeaderError, match=f"more than {MAX_SEGMENTS} segments"):
        header_of(data)


def test_other_content_is_none():
    for data in (b"", b"hello, world", b"GIF89a" + b"\x00" * 20, b"P6\n80 40\n255\n"):
        assert header_of(data) is None
