"""An image file's size and EXIF orientation, read from its header bytes without decoding any pixel.

``read_header(f)`` reads a binary file object (a file, or ``io.BytesIO`` of its bytes) with short seeks and
reads, so that a decompression bomb (a 600-byte JPEG whose frame header claims 60000 x 60000 pixels) is measured
before OpenCV allocates anything. Formats read: JPEG (the SOFn frame header; the orientation from an ``Exif``
APP1 segment), PNG (IHDR; the orientation from an ``eXIf`` chunk before IDAT), BMP (the DIB header), WebP
(``VP8 ``, ``VP8L`` or ``VP8X``; the orientation from an ``EXIF`` chunk) and TIFF (IFD0's ImageWidth, ImageLength
and Orientation). Anything else gives ``None``: not a format y9 reads.

Work is bounded whatever the file holds: at most ``MAX_SEGMENTS`` JPEG segments, PNG/WebP chunks or TIFF entries
are looked at, each by a read of a few bytes (an EXIF block is read up to ``MAX_EXIF_BYTES``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

from y9core.errors import Y9Error

MAX_SEGMENTS = 4096  # JPEG segments, PNG / WebP chunks or TIFF IFD entries looked at before giving up
MAX_EXIF_BYTES = (
    1 << 16
)  # an EXIF block is read up to this many bytes (a JPEG APP1 segment holds at most 64 kB)
FORMATS = ("JPEG", "PNG", "BMP", "WebP", "TIFF")

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers: C0-CF except C4 (DHT), C8 (JPG extension), CC (DAC)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM, RST0-7: markers without a length
_ORIENTATION_TAG, _WIDTH_TAG, _LENGTH_TAG = 0x0112, 0x0100, 0x0101


class HeaderError(Y9Error, ValueError):
    """A file of a known format whose header is cut short or malformed (the message reads after "it")."""


@dataclass(frozen=True)
class ImageHeader:
    """What an image file's header says.

    Attributes:
        format: one of ``FORMATS``. width, height: pixels as stored.
        orientation: the EXIF orientation tag, 1..8 (1: shown as stored; 5..8: turned by 90 degrees, so shown
            ``height`` wide); 1 when absent or out of range.
    """

    format: str
    width: int
    height: int
    orientation: int = 1

    @property
    def pixels(self) -> int:
        return self.width * self.height

    @property
    def turned(self) -> bool:
        """The orientation turns the picture by 90 degrees (width and height swap when it is shown)."""
        return self.orientation >= 5

    @property
    def shown_hw(self) -> tuple[int, int]:
        """(h, w) of the picture as shown, after the EXIF orientation (as OpenCV decodes it by default)."""
        return (self.width, self.height) if self.turned else (self.height, self.width)


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) < n:
        raise HeaderError("is cut short inside its header")
    return data


def tiff_tags(block: bytes, wanted: frozenset[int]) -> dict[int, int]:
    """Integer values of the ``wanted`` tags of a TIFF structure's first IFD (EXIF blocks are TIFF structures).

    Raises:
        HeaderError: no TIFF byte-order mark, or an IFD offset outside the block.
    """
    order = {b"II": "<", b"MM": ">"}.get(block[:2])
    if order is None or len(block) < 8:
        raise HeaderError("has a TIFF/EXIF block without a valid byte-order mark")
    (ifd,) = struct.unpack(order + "I", block[4:8])
    if ifd + 2 > len(block):
        raise HeaderError("has a TIFF/EXIF block whose first directory lies outside it")
    (count,) = struct.unpack(order + "H", block[ifd : ifd + 2])
    found: dict[int, int] = {}
    for k in range(min(count, MAX_SEGMENTS)):
        at = ifd + 2 + 12 * k
        if at + 12 > len(block):
            break
        tag, kind, n = struct.unpack(order + "HHI", block[at : at + 8])
        if tag not in wanted or n != 1:
            continue
        if kind == 3:  # SHORT, left-justified in the value field
            (found[tag],) = struct.unpack(order + "H", block[at + 8 : at + 10])
        elif kind == 4:  # LONG
            (found[tag],) = struct.unpack(order + "I", block[at + 8 : at + 12])
    return found


def _orientation(exif_tiff: bytes) -> int:
    try:
        value = tiff_tags(exif_tiff, frozenset({_ORIENTATION_TAG})).get(_ORIENTATION_TAG, 1)
    except HeaderError:
        return 1  # a damaged EXIF block: OpenCV shows the picture as stored then
    return value if 1 <= value <= 8 else 1


def _jpeg(f: BinaryIO) -> ImageHeader:
    orientation = 1
    for _ in range(MAX_SEGMENTS):
        byte = _read(f, 1)
        if byte != b"\xff":
            raise HeaderError("is a JPEG whose header is malformed (a segment does not start with 0xFF)")
        marker = _read(f, 1)[0]
        while marker == 0xFF:  # fill bytes
            marker = _read(f, 1)[0]
        if marker in _STANDALONE:
            continue
        if marker in (0xD9, 0xDA):  # EOI or SOS before any frame header
            raise HeaderError("is a JPEG without a frame header (no SOF segment before its image data)")
        (length,) = struct.unpack(">H", _read(f, 2))
        if length < 2:
            raise HeaderError(f"is a JPEG with a segment length of {length}")
        if marker in _SOF:
            _, height, width = struct.unpack(">BHH", _read(f, 5))
            return ImageHeader("JPEG", width, height, orientation)
        if marker == 0xE1 and length >= 8:
            body = f.read(min(length - 2, MAX_EXIF_BYTES))
            if body[:6] == b"Exif\x00\x00":
                orientation = _orientation(body[6:])
            f.seek(length - 2 - len(body), 1)
            continue
        f.seek(length - 2, 1)
    raise HeaderError(f"is a JPEG with more than {MAX_SEGMENTS} segments before its frame header")


def _png(f: BinaryIO) -> ImageHeader:
    length, kind = struct.unpack(">I4s", _read(f, 8))
    if kind != b"IHDR" or length < 8:
        raise HeaderError("is a PNG whose first chunk is not IHDR")
    width, height = struct.unpack(">II", _read(f, 8))
    f.seek(length - 8 + 4, 1)  # rest of IHDR, CRC
    orientation = 1
    for _ in range(MAX_SEGMENTS):
        head = f.read(8)
        if len(head) < 8:
            break
        length, kind = struct.unpack(">I4s", head)
        if kind in (b"IDAT", b"IEND"):
            break
        if kind == b"eXIf":
            orientation = _orientation(f.read(min(length, MAX_EXIF_BYTES)))
            break
        f.seek(length + 4, 1)
    return ImageHeader("PNG", width, height, orientation)


def _bmp(f: BinaryIO) -> ImageHeader:
    _read(f, 12)  # file size, reserved, pixel offset
    (size,) = struct.unpack("<I", _read(f, 4))
    if size == 12:  # BITMAPCOREHEADER
        width, height = struct.unpack("<HH", _read(f, 4))
    elif size >= 40:
        width, height = struct.unpack("<ii", _read(f, 8))
    else:
        raise HeaderError(f"is a BMP with an information header of {size} bytes")
    return ImageHeader("BMP", abs(width), abs(height))


def _webp(f: BinaryIO) -> ImageHeader:
    _read(f, 4)  # "WEBP"
    kind, length = struct.unpack("<4sI", _read(f, 8))
    body = _read(f, min(length, 30))
    if kind == b"VP8 " and len(body) >= 10 and body[3:6] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", body[6:10])
        return ImageHeader("WebP", w & 0x3FFF, h & 0x3FFF)
    if kind == b"VP8L" and len(body) >= 5 and body[0] == 0x2F:
        (bits,) = struct.unpack("<I", body[1:5])
        return ImageHeader("WebP", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if kind == b"VP8X" and len(body) >= 10:
        width = int.from_bytes(body[4:7], "little") + 1
        height = int.from_bytes(body[7:10], "little") + 1
        orientation = 1
        f.seek(length + (length & 1) - len(body), 1)
        for _ in range(MAX_SEGMENTS):
            head = f.read(8)
            if len(head) < 8:
                break
            kind, length = struct.unpack("<4sI", head)
            if kind == b"EXIF":
                block = f.read(min(length, MAX_EXIF_BYTES))
                orientation = _orientation(block[6:] if block[:6] == b"Exif\x00\x00" else block)
                break
            f.seek(length + (length & 1), 1)
        return ImageHeader("WebP", width, height, orientation)
    raise HeaderError(f"is a WebP whose first chunk ({kind!r}) is not a VP8, VP8L or VP8X header")


def _tiff(f: BinaryIO) -> ImageHeader:
    f.seek(0)
    head = _read(f, 8)
    order = "<" if head[:2] == b"II" else ">"
    (ifd,) = struct.unpack(order + "I", head[4:8])
    f.seek(ifd)
    (count,) = struct.unpack(order + "H", _read(f, 2))
    entries = _read(f, 12 * min(count, MAX_SEGMENTS))
    block = (
        head[:4] + struct.pack(order + "I", 8) + struct.pack(order + "H", min(count, MAX_SEGMENTS)) + entries
    )
    tags = tiff_tags(block, frozenset({_WIDTH_TAG, _LENGTH_TAG, _ORIENTATION_TAG}))
    if _WIDTH_TAG not in tags or _LENGTH_TAG not in tags:
        raise HeaderError("is a TIFF whose first directory has no ImageWidth or ImageLength")
    orientation = tags.get(_ORIENTATION_TAG, 1)
    return ImageHeader(
        "TIFF", tags[_WIDTH_TAG], tags[_LENGTH_TAG], orientation if 1 <= orientation <= 8 else 1
    )


def read_header(f: BinaryIO) -> ImageHeader | None:
    """The header of the image in ``f`` (read from its start), or None when it is none of ``FORMATS``.

    Raises:
        HeaderError: a file of one of ``FORMATS`` whose header is cut short or malformed.
    """
    f.seek(0)
    magic = f.read(12)
    f.seek(0)
    if magic[:3] == b"\xff\xd8\xff":
        f.seek(2)
        return _jpeg(f)
    if magic[:8] == _PNG_SIGNATURE:
        f.seek(8)
        return _png(f)
    if magic[:2] == b"BM":
        f.seek(2)
        return _bmp(f)
    if magic[:4] == b"RIFF" and magic[8:12] == b"WEBP":
        f.seek(8)
        return _webp(f)
    if magic[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff(f)
    return None
