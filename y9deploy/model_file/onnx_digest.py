"""A sha256 digest sealed into the ONNX files ``y9 export`` writes, checked whenever y9 opens one.

A flipped bit in an ONNX file's weights still parses, and ONNX Runtime runs it with one weight changed;
only a digest catches that. ``seal`` appends one ``metadata_props`` entry, ``y9_digest`` =
``sha256:<hex of every other byte of the file>``, to a serialized model; ``verify`` removes that entry's
bytes again and compares. Any change to the file (weights, graph, opset, other metadata) is refused.

The files are read at the protobuf wire level (a ModelProto's top-level fields), so neither ``onnx`` nor
``protobuf`` is needed: a deployment box has only onnxruntime. Files without the entry (exported by other
tools, or by earlier y9 versions) are not checked.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from y9core.errors import ModelFileError

DIGEST_KEY = "y9_digest"
_METADATA_FIELD = 14  # ModelProto.metadata_props (StringStringEntryProto: key = 1, value = 2)


def wire_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A protobuf varint at ``pos``: (value, position after it)."""
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError(f"a truncated or overlong varint at byte {pos}")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def wire_fields(data: bytes | memoryview) -> list[tuple[int, int, int, int, int]]:
    """The protobuf fields of one message (not nested ones): (number, start, end, payload start, payload end) of
    each; a varint field's payload is empty (read it with ``wire_varint`` after its tag at ``start``)."""
    out = []
    pos = 0
    while pos < len(data):
        start = pos
        tag, pos = wire_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ValueError(f"field number 0 at byte {start}")
        if wire == 0:
            _, pos = wire_varint(data, pos)
            payload = (pos, pos)
        elif wire == 1:
            pos += 8
            payload = (pos - 8, pos)
        elif wire == 2:
            length, pos = wire_varint(data, pos)
            pos += length
            payload = (pos - length, pos)
        elif wire == 5:
            pos += 4
            payload = (pos - 4, pos)
        else:
            raise ValueError(f"wire type {wire} of field {number} at byte {start}")
        if pos > len(data):
            raise ValueError(f"field {number} at byte {start} runs past the end of the file")
        out.append((number, start, pos, *payload))
    return out


def _entry(data: bytes | memoryview) -> tuple[str, str]:
    key = value = ""
    for number, _, _, lo, hi in wire_fields(data):
        text = bytes(data[lo:hi]).decode("utf-8")
        if number == 1:
            key = text
        elif number == 2:
            value = text
    return key, value


def _split(data: bytes) -> tuple[bytes, str | None]:
    """(the file without its digest entries, the recorded digest or None)."""
    view = memoryview(data)
    kept: list[memoryview] = []
    recorded = None
    last = 0
    for number, start, end, lo, hi in wire_fields(view):
        if number == _METADATA_FIELD:
            key, value = _entry(view[lo:hi])
            if key == DIGEST_KEY:
                kept.append(view[last:start])
                last = end
                recorded = value
    kept.append(view[last:])
    return b"".join(kept), recorded


def _entry_bytes(key: str, value: str) -> bytes:
    def ld(number: int, payload: bytes) -> bytes:
        return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload

    return ld(_METADATA_FIELD, ld(1, key.encode()) + ld(2, value.encode()))


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def metadata_props(path: str | os.PathLike) -> dict[str, str]:
    """The ``metadata_props`` of the ONNX file ``path`` (its digest entry left out), read at the wire level: no
    ``onnx`` package, no session. ModelFileError when the file is not a protobuf ModelProto."""
    path = Path(path)
    view = memoryview(path.read_bytes())
    try:
        entries = [_entry(view[lo:hi]) for number, _, _, lo, hi in wire_fields(view) if number == _METADATA_FIELD]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"{path} is damaged or not an ONNX model: its protobuf structure is broken ({exc}); copy it again or "
            "re-export it with `y9 export`."
        ) from None
    return {k: v for k, v in entries if k != DIGEST_KEY}


def seal(model_bytes: bytes) -> bytes:
    """A serialized ModelProto with its ``y9_digest`` entry (replacing any old one) appended."""
    body, _ = _split(model_bytes)
    return body + _entry_bytes(DIGEST_KEY, "sha256:" + hashlib.sha256(body).hexdigest())


_NOTED: set[str] = set()  # files already said to be unchecked


def note_unchecked(path: str | os.PathLike) -> None:
    """Warn once per file (``FactsWarning``) that a y9 ONNX file whose digest entry is missing runs unchecked."""
    path = Path(path)
    key = os.path.abspath(path)
    if key in _NOTED:
        return
    _NOTED.add(key)
    props = metadata_props(path)
    if "y9_version" not in props:
        return  # another tool's file: it never had a digest
    import warnings

    from y9core.model_facts import FactsWarning

    warnings.warn(
        f"{path} was written by y9 but has no '{DIGEST_KEY}' metadata entry, so its bytes are not checked (a changed "
        "weight would run unnoticed); expected the digest `y9 export` seals in: re-export it to have it checked.",
        FactsWarning,
        stacklevel=4,
    )


def verify(path: str | os.PathLike) -> bool:
    """Check the digest of the ONNX file ``path``; True when checked, False when the file has none.

    Raises:
        ModelFileError: the file is not a protobuf ModelProto, or it differs from what y9 sealed.
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        body, recorded = _split(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"{path} is damaged or not an ONNX model: its protobuf structure is broken ({exc}); copy it again or "
            "re-export it with `y9 export`."
        ) from None
    if recorded is None:
        return False
    actual = "sha256:" + hashlib.sha256(body).hexdigest()
    if actual != recorded:
        raise ModelFileError(
            f"{path} is damaged or was modified after `y9 export` wrote it: its sha256 {actual[7:23]}... differs "
            f"from the {recorded[7:23]}... recorded in its '{DIGEST_KEY}' metadata; copy it again or re-export it "
            f"(if you edited it on purpose, remove the '{DIGEST_KEY}' entry)."
        )
    return True
