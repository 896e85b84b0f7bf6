"""Session fixtures of the deploy tests: the embedded model and its ONNX exports, made once per test run (shared
by the pytest-xdist workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import made_once
from tests.deploy.embedded import IMGSZ, coco8_images, embedded_model_path


@pytest.fixture(scope="session")
def embedded_pt() -> Path:
    """The embedded default model (a y9 checkpoint, 80 COCO classes)."""
    return embedded_model_path()


@pytest.fixture(scope="session")
def embedded_export(embedded_pt, tmp_path_factory):
    """``embedded_export(imgsz=IMGSZ, **export_options) -> Path``: the embedded model exported to ONNX with these
    options (``dynamic_batch``, ``end2end``, ``half``, ``conf`` ...), exported once per run: the first worker to
    ask exports under a file lock, the others wait for it and share the file (``tests.conftest.made_once``)."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")

    def get(imgsz: int = IMGSZ, **options) -> Path:
        from y9deploy.export.onnx_export import export_onnx_report

        name = "-".join([f"e{imgsz}", *(f"{k}={v}" for k, v in sorted(options.items()))])
        def export(folder: Path) -> None:
            export_onnx_report(embedded_pt, folder / f"{name}.onnx", imgsz=imgsz, **options)

        return made_once(tmp_path_factory, f"embedded-{name}", export) / f"{name}.onnx"

    return get


@pytest.fixture(scope="session")
def coco8():
    """The eight coco8 images of tests/data (``LabelledImage``: path, frame, boxes in pixels)."""
    return coco8_images()
