"""Datasets as files, below both the trainer and deployment: data.yaml, image lists, YOLO label files and their
cache, image checks. numpy and OpenCV only (no torch), so that ``y9 val model.onnx`` and ``y9 data check`` run on a
deployment box."""
