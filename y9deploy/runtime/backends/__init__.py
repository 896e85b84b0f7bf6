"""The inference backends behind one small protocol, and how a model file picks one.

- ``backend``: the ``Backend`` protocol and the metadata the backends share;
- ``loading``: ``open_backend(path)``, the backend for a model file (its suffix, an engine's manifest);
- ``onnxruntime_backend``, ``tensorrt_backend`` (+ ``trt_profile``, ``foreign_engine``), ``torch_backend``;
- ``cuda``: a checked wrapper over ``cuda-python``; ``onnx_classes``: an end-to-end ONNX model's class count.

Arrows: ``loading`` -> each backend -> ``backend``; ``onnxruntime_backend``, ``tensorrt_backend`` -> ``cuda``. Below
it: ``y9deploy.engine``, ``y9deploy.model_file``, ``y9deploy.post`` (``post.options``); above it: the Detector
(``y9deploy.runtime``), export, serving and ``measure``. Importing it needs numpy only: onnxruntime, TensorRT, torch
and cuda-python are imported by the backend that needs them.
"""
