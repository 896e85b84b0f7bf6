"""Inference backends (TensorRT, ONNX Runtime, PyTorch) behind one small protocol, and the Detector.

Importing this package needs numpy and OpenCV only: torch, onnxruntime, TensorRT and cuda-python are
imported by the backend that needs them, when it is created.
"""

from y9deploy.runtime.backend import Backend, ModelInfo
from y9deploy.runtime.detector import Detector
from y9deploy.runtime.loading import backend_kind, open_backend

__all__ = ["Backend", "Detector", "ModelInfo", "backend_kind", "open_backend"]
