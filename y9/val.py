"""``val_model``: the one place that decides how a model file is validated, above both the trainer and deployment.

- a ``.pt`` checkpoint: the training-time validation loop (``y9train.reports.validate.val_checkpoint``; torch), with the
  fused model at the size it was trained at;
- any other model file (``.onnx``, ``.engine``): through ``Detector`` (``y9deploy.validate_deployed.val_deployed``;
  onnxruntime or TensorRT, no torch, nothing of the trainer), at the file's own input size.

Both use the same letterbox rule, thresholds and evaluator (``y9core.evaluation.metrics``), so a model and the files made from
it score alike. ``y9 val`` and ``y9.Model.val`` call it; ``validate`` adds ``Model.val``'s option check and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _validator(model: str | Path) -> Any:
    """The function that validates ``model`` (by its suffix; one sentence for a suffix no backend opens)."""
    from y9deploy.runtime.backends.loading import TORCH_SUFFIXES, backend_kind

    backend_kind(model)
    if Path(model).suffix.lower() in TORCH_SUFFIXES:
        from y9train.reports.validate import val_checkpoint

        return val_checkpoint
    from y9deploy.validate_deployed import val_deployed

    return val_deployed


def val_model(data, model: str | Path, **kwargs):
    """COCO metrics of ``model`` on a data.yaml split; returns ``y9core.evaluation.result.ValResult``."""
    return _validator(model)(data, model, **kwargs)


def _yolo_keywords(model: str | Path, options: dict[str, Any]) -> dict[str, Any]:
    """YOLO tools' val keywords in y9's terms: ``imgsz`` by ``y9.imgsz_rule`` (one square size), ``half`` (a
    checkpoint's autocast: ``amp`` 'fp16' / 'off'; a deployed file's precision is its own), ``verbose`` (y9's
    validation prints nothing), ``batch`` / ``workers`` / ``max_det`` whole numbers."""
    from y9.imgsz_rule import check_imgsz
    from y9.keywords import check_bool, check_int
    from y9deploy.runtime.backends.loading import TORCH_SUFFIXES

    options = dict(options)
    if "verbose" in options:
        check_bool("Model.val", "verbose", options.pop("verbose"))
    if "imgsz" in options:
        options["imgsz"] = check_imgsz("Model.val", options["imgsz"], square=True)
    for name, low in (("batch", 1), ("workers", 0), ("max_det", 1)):
        if name in options:
            options[name] = check_int("Model.val", name, options[name], low)
    if "half" in options:
        half = check_bool("Model.val", "half", options.pop("half"))
        if Path(model).suffix.lower() in TORCH_SUFFIXES:
            options.setdefault("amp", "fp16" if half else "off")
        elif half:
            raise TypeError(f"Model.val(half=True): {model} runs at the precision it was exported or built with; "
                            "expected an FP16 export (y9 export --half) for FP16.")  # fmt: skip
    return options


def validate(data, model: str | Path, *, save_dir: str | Path | None = None, save_json: bool = False,
             project: str | Path | None = None, name: str | None = None, exist_ok: bool = False,
             plots: bool = True, **options: Any) -> Any:  # fmt: skip
    """``Model.val``: ``options`` checked against the validator's own (TypeError, one sentence), ``val_model``, and
    the report files in ``save_dir`` or in the run folder ``project``/``name`` (``y9core.files.run_dir``, as ``y9 val``:
    ``runs/val``, ``runs/val2`` ... for ``project`` alone, and with none of them). Returns the ``ValResult``, its
    ``save_dir`` the report's folder; ``plots=False`` leaves the report's pictures out."""
    from y9.keywords import check_bool
    from y9.options import check_options

    plots = check_bool("Model.val", "plots", plots)
    options = _yolo_keywords(model, options)
    check_options("Model.val", options, _validator(model), drop=("data", "model"),
                  extra=("save_dir", "save_json", "project", "name", "exist_ok"))  # fmt: skip
    if save_dir is not None and (project is not None or name is not None):
        raise TypeError("Model.val() got save_dir and project/name; expected one way to name the report's folder.")
    run = None
    if save_dir is None and project is None and name is None:
        project = "runs"  # as y9 val: the report files go to a new runs/val[N]
    if save_dir is None:
        from y9core.files.run_dir import resolve_output_dir

        parent = Path(project) if project is not None else Path("runs")
        run = resolve_output_dir(parent / name if name is not None else None, task="val", exist_ok=exist_ok,
                                 inputs=[data, model], project=parent)  # fmt: skip
        save_dir = run.path
    try:
        result = val_model(data, model, **options)  # imgsz None: the library's rule (the trained size)
    except BaseException:
        if run is not None:
            run.remove_if_unused()
        raise
    if save_dir is not None:
        from y9core.evaluation.report import write_val_report

        about = {"model": str(model), "data": str(data), "split": options.get("split", "val"),
                 "imgsz": list(result.imgsz) if result.imgsz else options.get("imgsz")}  # fmt: skip
        write_val_report(result, save_dir, save_json=save_json, about=about, pictures=plots)
        result.save_dir = Path(save_dir)
    return result
