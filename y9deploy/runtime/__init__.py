"""Inference backends (TensorRT, ONNX Runtime, PyTorch) behind one small protocol, the Detector, and the two
pipelines it runs (``host_pipeline.HostPipeline``, ``gpu_pipeline.GpuPipeline``: the ``Pipeline`` protocol), which
``frame_pipeline.build_pipeline`` builds by its rule.

Importing this package needs numpy and OpenCV only: torch, onnxruntime, TensorRT and cuda-python are
imported by the backend or pipeline that needs them, when it is created.
"""

from y9core.model_facts import ModelFacts
from y9deploy.runtime.backends.backend import Backend
from y9deploy.runtime.backends.loading import backend_kind, open_backend
from y9deploy.runtime.detector import Detector
from y9deploy.runtime.pipeline import Pipeline

__all__ = [
    "Backend",
    "Detector",
    "ModelFacts",
    "Pipeline",
    "backend_kind",
    "open_backend",
]
