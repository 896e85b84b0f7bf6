"""y9deploy: YOLOv9 deployment — export, TensorRT engines, the Detector runtime and benchmarks.

Importing this package (and ``y9deploy.runtime``, ``detections``, ``preprocess``, ``postprocess``,
``nms``) needs numpy and OpenCV only; torch is imported by the functions that need it (export).
The public names below are loaded on first use (PEP 562); ``dir(y9deploy)`` lists them, and the
``TYPE_CHECKING`` imports show them to type checkers and editors.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from y9core.version import __version__

_LAZY = {
    "Detections": "y9deploy.detections",
    "Detector": "y9deploy.runtime.detector",
    "export_onnx": "y9deploy.export.onnx_export",
    "build_engine": "y9deploy.engine.builder",
    "benchmark": "y9deploy.measure.bench",
    "BenchmarkResult": "y9deploy.measure.bench",
    "Y9Error": "y9core.errors",
    "TritonDetector": "y9deploy.serving.triton_client",
    "default_model_path": "y9deploy.default_model",
    "ModelFacts": "y9core.model_facts",
    "read_facts": "y9deploy.facts",
}

__all__ = [
    "BenchmarkResult",
    "Detections",
    "Detector",
    "ModelFacts",
    "TritonDetector",
    "Y9Error",
    "benchmark",
    "build_engine",
    "default_model_path",
    "export_onnx",
    "read_facts",
    "__version__",
]

if TYPE_CHECKING:
    from y9core.errors import Y9Error
    from y9core.model_facts import ModelFacts
    from y9deploy.default_model import default_model_path
    from y9deploy.detections import Detections
    from y9deploy.engine.builder import build_engine
    from y9deploy.export.onnx_export import export_onnx
    from y9deploy.facts import read_facts
    from y9deploy.measure.bench import BenchmarkResult, benchmark
    from y9deploy.runtime.detector import Detector
    from y9deploy.serving.triton_client import TritonDetector


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'y9deploy' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (loaded or not) and the subpackages imported so far."""
    loaded = {k for k, v in globals().items() if not k.startswith("_") and isinstance(v, ModuleType)}
    return sorted(set(__all__) | loaded)
