"""The version of y9, in one place: ``y9deploy.__version__``, ``y9train.__version__`` and the version every
artifact records (ONNX metadata, engine manifest, checkpoint) read it from here (pyproject.toml states it too)."""

__version__ = "0.1.0"
