"""y9: YOLOv9 from checkpoint to a fast, trustworthy detector, in one namespace.

    import y9
    m = y9.Model(y9.default_model_path())      # a .pt checkpoint, a model name ("gelan-s") or a .onnx / .engine
    print(m.info())
    for r in m.predict("clip.mp4", stream=True):  # y9.Result: path, frame, orig_img, detections, plot(), save()
        print(r.path, r.frame, len(r.detections))
    m.track("clip.mp4", persist=True)           # results with track ids
    with y9.Detector("model.engine") as det:    # the runtime alone
        dets = det.predict(frame)

``import y9`` is light: it imports neither torch nor numpy; each name below is loaded on first use (PEP 562),
``dir(y9)`` lists them and the ``TYPE_CHECKING`` imports show them to type checkers and editors. The packages
behind it (``y9deploy``, ``y9train``, ``y9core``) keep their import paths.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from y9deploy import __version__

#: public name -> (module, attribute in it)
_LAZY = {
    "Model": ("y9.model", "Model"),
    "ModelSummary": ("y9.model", "ModelSummary"),
    "Result": ("y9.results", "Result"),
    "Detector": ("y9deploy.runtime.detector", "Detector"),
    "Detections": ("y9deploy.detections", "Detections"),
    "train": ("y9train.run.train", "train"),
    "export": ("y9deploy.export.onnx_export", "export_onnx"),
    "build_engine": ("y9deploy.engine.builder", "build_engine"),
    "benchmark": ("y9deploy.measure.bench", "benchmark"),
    "default_model_path": ("y9deploy.default_model", "default_model_path"),
    "Y9Error": ("y9core.errors", "Y9Error"),
}

__all__ = [
    "Detections",
    "Detector",
    "Model",
    "ModelSummary",
    "Result",
    "Y9Error",
    "benchmark",
    "build_engine",
    "default_model_path",
    "export",
    "train",
    "__version__",
]

if TYPE_CHECKING:
    from y9.model import Model, ModelSummary
    from y9.results import Result
    from y9core.errors import Y9Error
    from y9deploy.default_model import default_model_path
    from y9deploy.detections import Detections
    from y9deploy.engine.builder import build_engine
    from y9deploy.export.onnx_export import export_onnx as export
    from y9deploy.measure.bench import benchmark
    from y9deploy.runtime.detector import Detector
    from y9train.run.train import train


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'y9' has no attribute {name!r}")
    value = getattr(import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (loaded or not) and the submodules imported so far."""
    loaded = {k for k, v in globals().items() if not k.startswith("_") and isinstance(v, ModuleType)}
    return sorted(set(__all__) | loaded)
