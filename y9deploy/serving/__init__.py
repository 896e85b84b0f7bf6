"""Serving y9 models: Triton Inference Server model repositories (``triton_repo``) and a client that gives the
same ``Detections`` as ``Detector`` (``triton_client.TritonDetector``)."""
