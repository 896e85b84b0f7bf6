"""``val_model``: the one place that decides how a model file is validated, above both the trainer and deployment.

- a ``.pt`` checkpoint: the training-time validation loop (``y9train.validate.val_checkpoint``; torch), with the
  fused model at the size it was trained at;
- any other model file (``.onnx``, ``.engine``): through ``Detector`` (``y9deploy.validate_deployed.val_deployed``;
  onnxruntime or TensorRT, no torch, nothing of the trainer), at the file's own input size.

Both use the same letterbox rule, thresholds and evaluator (``y9core.metrics``), so a model and the files made from
it score alike. ``y9 val`` and ``y9.Model.val`` call it.
"""

from __future__ import annotations

from pathlib import Path


def val_model(data, model: str | Path, **kwargs):
    """COCO metrics of ``model`` on a data.yaml split; returns ``y9core.val_result.ValResult``."""
    from y9deploy.runtime.loading import TORCH_SUFFIXES, backend_kind

    backend_kind(model)  # one sentence for a suffix no backend opens
    if Path(model).suffix.lower() in TORCH_SUFFIXES:
        from y9train.validate import val_checkpoint

        return val_checkpoint(data, model, **kwargs)
    from y9deploy.validate_deployed import val_deployed

    return val_deployed(data, model, **kwargs)
