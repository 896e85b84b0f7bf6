"""The model that ships inside the package: a small y9 checkpoint trained on coco128 (see assets/MODEL_CARD.md).

``default_model_path()`` is what ``Detector()`` and ``y9 predict IMAGE`` use when no model is given. This module
imports nothing heavy (no torch, no numpy), so a deployment box can ask for the path cheaply.
"""

from __future__ import annotations

from pathlib import Path

from y9core.errors import ModelFileError

ASSETS = Path(__file__).resolve().parent / "assets"
DEFAULT_MODEL_FILE = ASSETS / "y9-coco128.pt"
MODEL_CARD_FILE = ASSETS / "MODEL_CARD.md"


def default_model_path(*, check: bool = True) -> Path:
    """The path of the embedded default model (a y9 checkpoint: 80 COCO classes, trained at 640 on coco128).

    Args:
        check: raise ``ModelFileError`` when the file is not there (an install without the package data).
    """
    if check and not DEFAULT_MODEL_FILE.is_file():
        raise ModelFileError(
            f"the embedded default model {DEFAULT_MODEL_FILE} is missing (an install without y9's package "
            "data?); reinstall y9, or pass the path of a .pt, .onnx or .engine model explicitly."
        )
    return DEFAULT_MODEL_FILE
