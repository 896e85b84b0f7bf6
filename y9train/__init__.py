"""y9train: YOLOv9 / GELAN models, checkpoints, re-parameterization and a compact single-GPU trainer."""

__version__ = "0.1.0"
