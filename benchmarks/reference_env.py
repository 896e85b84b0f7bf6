"""What the reference trainers need around them to run untouched here: the official YOLOv9 code's import shims and
environment, and the font both reference trainers would otherwise download. Benchmark code only."""

from __future__ import annotations

import os
from pathlib import Path


def official_shims(work: Path) -> Path:
    """Write ``work/official_shims``: a ``sitecustomize.py`` that lets the official code run on numpy 2
    (``numpy.trapz``) and torch >= 2.6 (``torch.load`` defaulting to ``weights_only=False``: only for the official's
    own subprocesses, which load their own checkpoints), and an ``IPython`` stub (its ``utils`` import IPython).
    Returns the folder. On ``sys.path`` of a running process only the stub takes effect (``sitecustomize`` runs at
    interpreter start)."""
    shim = work / "official_shims"
    (shim / "IPython").mkdir(parents=True, exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import numpy\nif not hasattr(numpy, 'trapz'):\n    numpy.trapz = numpy.trapezoid\n"
        "import torch\n_load = torch.load\n"
        "def _compat_load(*a, **k):\n    k.setdefault('weights_only', False)\n    return _load(*a, **k)\n"
        "torch.load = _compat_load\n"
    )
    (shim / "IPython" / "__init__.py").write_text(
        "version_info = (8, 0, 0)\n__version__ = '8.0.0'\ndef get_ipython():\n    return None\n"
    )
    (shim / "IPython" / "display.py").write_text("def display(*a, **k):\n    pass\nclear_output = display\n")
    return shim


def official_env(work: Path) -> dict:
    """The environment of an official subprocess: the shims first on PYTHONPATH, its config folder (with a font)."""
    shim = official_shims(work)
    cfg = work / "official_config"
    cfg.mkdir(exist_ok=True)
    reference_font(cfg)
    env = dict(os.environ, PYTHONPATH=f"{shim}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env["YOLOV5_CONFIG_DIR"] = str(cfg)
    return env


def ultralytics_env(folder: Path) -> None:
    """Ultralytics run offline with its settings and font in ``folder`` (set before ``import ultralytics``; a
    variable already set is kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    reference_font(folder)
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_CONFIG_DIR", str(folder))


def reference_font(folder: Path) -> None:
    """The reference trainers want Arial.ttf in their config folder and would download it: give them matplotlib's
    DejaVuSans instead (the font only draws plot labels)."""
    import matplotlib

    src = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    for name in ("Arial.ttf", "Arial.Unicode.ttf"):
        if not (folder / name).exists():
            (folder / name).write_bytes(src.read_bytes())
