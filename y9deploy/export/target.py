"""What an export writes is what its name says: the format decided once (``export_format``) and the output's
suffix checked against it (``check_suffix``), for ``y9 export`` and ``y9.Model.export`` alike."""

from __future__ import annotations

import os
from pathlib import Path

#: the formats y9 exports -> the suffix of their file
FORMATS = {"onnx": ".onnx", "engine": ".engine"}


def export_format(fmt: object | None, path: str | os.PathLike | None = None) -> str:
    """``fmt`` ('onnx', 'engine'; any case) checked; None: by ``path``'s suffix (``.engine``), else 'onnx'."""
    if fmt is None:
        return "engine" if path is not None and Path(path).suffix.lower() == ".engine" else "onnx"
    key = str(fmt).lower().lstrip(".")
    if key not in FORMATS:
        raise ValueError(f"format={fmt!r}; y9 exports {' and '.join(repr(f) for f in FORMATS)} (a TensorRT engine); "
                         "expected one of these.")  # fmt: skip
    return key


def check_suffix(path: str | os.PathLike, fmt: str = "onnx") -> Path:
    """``path`` when its suffix is the format's (``.onnx``, ``.engine``); else one sentence naming both."""
    path = Path(path)
    want = FORMATS[fmt]
    if path.suffix.lower() != want:
        got = f"ends in {path.suffix!r}" if path.suffix else "has no suffix"
        what = "an ONNX model" if fmt == "onnx" else "a TensorRT engine"
        raise ValueError(f"output {path} {got}, but the export writes {what}; expected a name ending in {want}.")
    return path


def inside_installed_package(path: str | os.PathLike) -> bool:
    """``path`` is inside one of y9's own package folders or an installed packages folder (site-packages): a place
    for the package's files, not the user's."""
    import importlib.util

    real = Path(path).resolve()
    if any(part in ("site-packages", "dist-packages") for part in real.parts):
        return True
    for name in ("y9", "y9deploy", "y9core", "y9train", "y9cli"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None and Path(spec.origin).resolve().parent in real.parents:
            return True
    return False


def default_export_path(source: str | os.PathLike, fmt: str = "onnx") -> Path:
    """Where an export of ``source`` goes when no path is given: beside it with the format's suffix; official weights
    downloaded by name (in the cache): the current folder; a file inside the installed package (the embedded
    model): a new run folder ``runs/export[N]`` (``y9core.files.run_dir``)."""
    from y9deploy.model_file.official_weights import cache_dir

    source = Path(source)
    name = source.with_suffix(FORMATS[fmt]).name
    if source.parent.resolve() == Path(cache_dir()).resolve():
        return Path(name)
    if inside_installed_package(source):
        from y9core.files.run_dir import resolve_output_dir

        return resolve_output_dir(None, task="export", inputs=[source]).path / name
    return source.with_suffix(FORMATS[fmt])
