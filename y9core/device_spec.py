"""What a ``device`` option names, read by one grammar for every command and backend (``parse_device``).

The trainer and validation of checkpoints (``y9train.setup.device_model.resolve_device``: a torch device) and the deployment
backends (onnxruntime, TensorRT, torch) all read a device through it, so ``--device gpu`` means the same to
``y9 val`` of a ``.pt`` as of an ``.onnx``. Whether that device exists is for each of them to check.
"""

from __future__ import annotations

import numbers

KINDS = ("auto", "cpu", "cuda")


def parse_device(device: str | int | None) -> tuple[str, int]:
    """``device`` -> ``(kind, index)``, kind one of ``KINDS``.

    None, "", "auto" -> ("auto", 0) (the first GPU where there is one, else the CPU); "cpu" -> ("cpu", 0);
    "cuda", "gpu" -> ("cuda", 0); "cuda:N", "gpu:N", "N" or an integer N -> ("cuda", N). Case and spaces are ignored.

    Raises:
        ValueError: one sentence naming the value: anything else, a list of devices ("0,1") included.
    """
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        if int(device) < 0:
            raise ValueError(f"device={device!r} is not a GPU index; expected 0 or more.")
        return "cuda", int(device)
    if device is not None and not isinstance(device, str):
        raise ValueError(f"device={device!r} is not a device; expected 'cpu', 'cuda', 'cuda:N' or a GPU index N.")
    text = "" if device is None else device.strip().lower()
    if text in ("", "auto"):
        return "auto", 0
    if text == "cpu":
        return "cpu", 0
    if "," in text:
        raise ValueError(
            f"device={device!r} names several devices; this runs on one: expected cpu or one GPU index such as 0."
        )
    for prefix in ("cuda", "gpu"):
        if text == prefix:
            return "cuda", 0
        if text.startswith(prefix + ":"):
            text = text[len(prefix) + 1 :]
            break
    if text.isdigit():
        return "cuda", int(text)
    raise ValueError(f"device={device!r} is not a device; expected 'cpu', 'cuda', 'cuda:N' or a GPU index N.")
