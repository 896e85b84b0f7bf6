"""y9train: YOLOv9 / GELAN models, checkpoints, re-parameterization and a compact single-GPU trainer."""

from y9core.version import __version__ as __version__
