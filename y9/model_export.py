"""``Model.export``: the keywords (y9's and YOLO tools' names), the format and the output path decided once, then
``y9deploy.export_onnx_report`` (and ``build_engine`` for ``format='engine'``)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

#: YOLO tools' export keyword -> y9's
ALIASES = {"dynamic": "dynamic_batch", "nms": "end2end"}
ENGINE_ONLY = ("workspace",)  # build_engine's workspace_gb (GB), format='engine'
BOOLS = ("dynamic_batch", "half", "simplify", "end2end", "check")


def _exporter(int8: bool = False) -> Any:
    """The one exporter a call uses: ``export_int8`` (QDQ INT8, calibrated and gated) or ``export_onnx_report``."""
    if int8:
        from y9deploy.int8.export import export_int8

        return export_int8
    from y9deploy.export.onnx_export import export_onnx_report

    return export_onnx_report


def accepted(int8: bool = False) -> set[str]:
    """The keywords ``Model.export`` takes (with ``int8=True``: ``export_int8``'s)."""
    params = inspect.signature(_exporter(int8)).parameters.values()
    own = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"source", "path", "data"}
    return own | set(ALIASES) | set(ENGINE_ONLY) | {"format"}


def export_options(options: dict[str, Any], fmt: str, int8: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` -> (the ONNX exporter's keywords, ``build_engine``'s); one sentence for a keyword y9 lacks or a
    value of the wrong type."""
    from y9.imgsz_rule import check_imgsz
    from y9.keywords import check_bool, check_int, lacking

    action = "Model.export"
    known = accepted(int8)
    onnx: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    for name, value in options.items():
        if name not in known:
            raise lacking(action, name, known)
        key = ALIASES.get(name, name)
        if key in BOOLS:
            value = check_bool(action, name, value)
        elif key in ("opset", "batch", "max_det"):
            value = check_int(action, name, value, low=7 if key == "opset" else 1)
        elif key == "imgsz":
            value = check_imgsz(action, value)
        if key in ENGINE_ONLY:
            if fmt != "engine":
                raise TypeError(f"{action}(workspace={value!r}) sizes a TensorRT build; expected format='engine'.")
            engine["workspace_gb"] = float(value)
        else:
            onnx[key] = value
    return onnx, engine


def export_model(
    source: Path, path: str | Path | None, options: dict[str, Any], *, int8: bool = False, data: Any = None
) -> Path:
    """Export the checkpoint ``source`` to ``path`` (None: ``y9deploy.export.target.default_export_path``) in the
    format ``options['format']`` names (default: by ``path``'s suffix, else ONNX); the suffix must be the format's.
    ``int8``: a QDQ INT8 ONNX calibrated on ``data``'s train images and gated on its val split (``NAME-int8.onnx``)."""
    from y9.keywords import check_bool
    from y9deploy.export.target import check_suffix, default_export_path, export_format

    options = dict(options)
    int8 = check_bool("Model.export", "int8", int8)
    fmt = export_format(options.pop("format", None), path)
    onnx_opts, engine_opts = export_options(options, fmt, int8)
    if int8:
        if data is None:
            raise ValueError("Model.export(int8=True) needs data= (a data.yaml: its train images calibrate, its "
                             "val split gates the accuracy).")  # fmt: skip
        onnx_opts["data"] = data
    elif data is not None:
        raise TypeError("Model.export(data=...) is the INT8 calibration set; expected it with int8=True.")
    if path is None:
        target = default_export_path(source, fmt)
        if int8:
            target = target.with_name(f"{target.stem}-int8{target.suffix}")
    else:
        target = check_suffix(path, fmt)
    onnx_path = target if fmt == "onnx" else target.with_suffix(".onnx")
    out = _exporter(int8)(source, onnx_path, **onnx_opts).path
    if fmt == "onnx":
        return Path(out)
    from y9deploy.engine.builder import build_engine

    return Path(build_engine(out, target, **engine_opts))
