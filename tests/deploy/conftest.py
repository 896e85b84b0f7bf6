"""Session fixtures of the deploy tests: the embedded model and its ONNX exports, made once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.embedded import IMGSZ, coco8_images, embedded_model_path


@pytest.fixture(scope="session")
def embedded_pt() -> Path:
    """The embedded default model (a y9 checkpoint, 80 COCO classes)."""
    return embedded_model_path()


@pytest.fixture(scope="session")
def embedded_export(embedded_pt, tmp_path_factory):
    """``embedded_export(imgsz=IMGSZ, **export_options) -> Path``: the embedded model exported to ONNX with these
    options (``dynamic_batch``, ``end2end``, ``half``, ``conf`` ...), exported once per session and shared."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    root = tmp_path_factory.mktemp("embedded")
    cache: dict[tuple, Path] = {}

    def get(imgsz: int = IMGSZ, **options) -> Path:
        from y9deploy.export.onnx_export import export_onnx_report

        key = (imgsz, tuple(sorted(options.items())))
        if key not in cache:
            name = "-".join([f"e{imgsz}", *(f"{k}={v}" for k, v in sorted(options.items()))])
            cache[key] = export_onnx_report(embedded_pt, root / f"{name}.onnx", imgsz=imgsz, **options).path
        return cache[key]

    return get


@pytest.fixture(scope="session")
def coco8():
    """The eight coco8 images of tests/data (``LabelledImage``: path, frame, boxes in pixels)."""
    return coco8_images()
