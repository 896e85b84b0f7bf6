"""y9deploy: YOLOv9 deployment — export, TensorRT engines, the Detector runtime and benchmarks.

Importing this package (and ``y9deploy.runtime``, ``detections``, ``preprocess``, ``postprocess``,
``nms``) needs numpy and OpenCV only; torch is imported by the functions that need it (export).
The public names below are loaded on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Detections": "y9deploy.detections",
    "Detector": "y9deploy.runtime.detector",
    "export_onnx": "y9deploy.export.onnx_export",
    "build_engine": "y9deploy.engine.builder",
    "benchmark": "y9deploy.bench",
    "BenchmarkResult": "y9deploy.bench",
    "Y9Error": "y9core.errors",
    "TritonDetector": "y9deploy.serving.triton_client",
    "default_model_path": "y9deploy.default_model",
    "ModelFacts": "y9core.model_facts",
    "read_facts": "y9deploy.facts",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'y9deploy' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
