"""Inference backends (TensorRT, ONNX Runtime, PyTorch) behind one small protocol, the Detector, and the two
pipelines it runs (``HostPipeline``, ``GpuPipeline``: the ``Pipeline`` protocol).

Importing this package needs numpy and OpenCV only: torch, onnxruntime, TensorRT and cuda-python are
imported by the backend or pipeline that needs them, when it is created.
"""

from y9core.model_facts import ModelFacts
from y9deploy.runtime.backend import Backend
from y9deploy.runtime.detector import Detector
from y9deploy.runtime.gpu_pipeline import GpuPipeline
from y9deploy.runtime.host_pipeline import HostPipeline
from y9deploy.runtime.loading import backend_kind, open_backend
from y9deploy.runtime.pipeline import Pipeline

__all__ = [
    "Backend",
    "Detector",
    "GpuPipeline",
    "HostPipeline",
    "ModelFacts",
    "Pipeline",
    "backend_kind",
    "open_backend",
]
