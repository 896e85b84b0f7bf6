"""The Detector and the frame pipelines it runs; the backends below it in ``runtime.backends``.

- ``detector``: ``Detector`` (DESIGN.md's ``y9deploy.Detector``); ``busy``: one thread at a time;
  ``image_file``: an image path -> a frame;
- ``frame_pipeline``: ``choose_pipeline``, the one rule, and ``build_pipeline``; ``pipeline``: the ``Pipeline``
  protocol and the stage names;
- ``host_pipeline``: ``HostPipeline`` (numpy, OpenCV); ``gpu_pipeline``: ``GpuPipeline`` (torch on CUDA),
  pipelined by ``gpu_stream``;
- ``backends/``: the ``Backend`` protocol, ONNX Runtime, TensorRT and torch, and ``open_backend``.

Arrows: ``detector`` -> ``frame_pipeline`` -> ``host_pipeline`` | ``gpu_pipeline`` -> ``pipeline``; ``detector`` ->
``backends.loading``. Below it: ``pre``, ``post``, ``runtime.backends``, ``tracking``.

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
