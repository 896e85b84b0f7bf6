"""Integrity of checkpoint files: the zip CRCs, the sha256 digest y9 stores over its tensors, finite
floating-point weights.

A y9 checkpoint (``y9train.checkpoint``) carries ``"digest": {"sha256": HEX, "tensors": N}``: the sha256 over
every tensor of the payload (its place in the payload, dtype, shape and bytes, in payload order), written by
``save_checkpoint`` and checked by ``read_checkpoint``. Files written before the digest existed still load; for
them (and for official checkpoints, which are zip files written by ``torch.save`` too) the CRC-32 of every zip
member is checked, which ``torch.load`` does not do. Each failure is one ``ModelFileError`` sentence naming the
file.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from y9core.errors import ModelFileError

DIGEST_KEY = "digest"
_CHUNK = 1 << 20


def iter_tensors(obj: Any, where: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """``(place, tensor)`` for every tensor inside nested dicts / lists / tuples, in their order."""
    if isinstance(obj, torch.Tensor):
        yield where, obj
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from iter_tensors(value, f"{where}.{key}" if where else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from iter_tensors(value, f"{where}[{i}]")


def tensor_digest(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``{"sha256": HEX, "tensors": N}`` over every tensor of ``payload`` except its own digest entry."""
    h = hashlib.sha256()
    n = 0
    for where, t in iter_tensors({k: v for k, v in payload.items() if k != DIGEST_KEY}):
        t = t.detach().cpu().contiguous().reshape(-1)
        h.update(f"{where}|{t.dtype}|{t.numel()}|".encode())
        h.update(memoryview(t.view(torch.uint8).numpy()))
        n += 1
    return {"sha256": h.hexdigest(), "tensors": n}


def check_digest(payload: Mapping[str, Any], path: Path) -> bool:
    """Verify a y9 payload's digest; False when it has none (an older file). One sentence when it differs."""
    stored = payload.get(DIGEST_KEY)
    if stored is None:
        return False
    if not isinstance(stored, Mapping) or not isinstance(stored.get("sha256"), str):
        raise ModelFileError(
            f"{path}: its '{DIGEST_KEY}' entry is {type(stored).__name__} without a sha256 string; expected the "
            "digest y9 writes, the file is damaged"
        )
    if tensor_digest(payload)["sha256"] != stored["sha256"]:
        raise ModelFileError(
            f"{path}: is damaged: its tensors do not match the sha256 digest stored when y9 wrote it "
            "(bytes changed on disk or in transfer); expected an intact y9 checkpoint, copy or train it again"
        )
    return True


def check_zip_crc(path: Path) -> None:
    """Check the CRC-32 of every member of a zip-format checkpoint (legacy non-zip files pass unchecked)."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return  # torch's legacy format, or not a zip at all: torch.load says what it is
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                with z.open(info) as member:  # zipfile compares the CRC-32 at the end of each member
                    while member.read(_CHUNK):
                        pass
    except zipfile.BadZipFile as exc:
        if "CRC" in str(exc):
            raise ModelFileError(
                f"{path}: is damaged: {exc} in the zip CRC check (bytes changed on disk or in transfer); "
                "expected an intact .pt checkpoint, copy it again"
            ) from None
        raise ModelFileError(
            f"{path}: is truncated or corrupt ({exc}); expected a y9 or official YOLOv9 .pt checkpoint"
        ) from None
    except (OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ModelFileError(
            f"{path}: is truncated or corrupt ({type(exc).__name__}: {exc}); expected a y9 or official "
            "YOLOv9 .pt checkpoint"
        ) from None


def first_non_finite(tensors: Mapping[str, torch.Tensor]) -> str | None:
    """Name of the first floating-point tensor of ``tensors`` holding a NaN or inf, or None (one host sync)."""
    named = [(k, t) for k, t in tensors.items() if t.is_floating_point() and t.numel()]
    if not named:
        return None
    ok = torch.stack([torch.isfinite(t).all() for _, t in named]).cpu()
    bad = (~ok).nonzero()
    return named[int(bad[0])][0] if len(bad) else None


def check_finite(state_dict: Mapping[str, torch.Tensor], origin: str | Path) -> None:
    """One sentence naming the first weight tensor holding NaN or infinity."""
    key = first_non_finite(state_dict)
    if key is not None:
        value = state_dict[key]
        bad = value[~torch.isfinite(value)].flatten()[0].item()
        raise ModelFileError(
            f"{origin}: weight {key} holds {'NaN' if math.isnan(bad) else bad} values; expected finite "
            "weights (the run that wrote it diverged, or the file is damaged)"
        )


def check_floating(state_dict: Mapping[str, torch.Tensor], path: Path) -> None:
    """One sentence naming the first weight that is not floating point (BatchNorm's step counters excepted)."""
    for key, value in state_dict.items():
        if not value.is_floating_point() and not key.endswith("num_batches_tracked"):
            raise ModelFileError(
                f"{path}: weight {key} is {str(value.dtype).replace('torch.', '')}; expected floating-point weights "
                "(float32, float16 or bfloat16): a damaged or hand-edited y9 checkpoint"
            )
