"""``y9 val`` on the very file that is deployed: an ONNX model or a TensorRT engine, run through ``Detector``
(its letterbox, backend and NMS), scored by the same evaluator as checkpoints (``y9core.evaluation.metrics.evaluate``,
the ``ValResult`` of ``y9core.evaluation.result``): numpy and the runtime only, no torch and nothing of the trainer.

``.pt`` checkpoints are validated by ``y9train.reports.validate.val_checkpoint`` (the training-time loop; ``y9 val``
decides which, in ``y9cli``): the same letterbox, size (the model's trained one by default), thresholds and
evaluator, so the two agree on one model. Nothing here imports torch or the trainer: a deployment box validates
what it deploys with onnxruntime (or TensorRT) alone.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from y9core.errors import DataError


def val_deployed(
    data,
    model: str | Path,
    *,
    imgsz: int | None = None,
    batch: int = 32,
    conf: float = 0.001,
    iou: float = 0.7,
    max_det: int = 300,
    device: str | None = None,
    workers: int = 8,
    split: str = "val",
):
    """COCO metrics of an ``.onnx`` / ``.engine`` file (or any file ``Detector`` opens) on a data.yaml split.

    Thresholds as the checkpoint validation (conf 0.001, iou 0.7, max_det 300, one label per box); the letterbox is
    the model's (its facts). ``imgsz``: None lets the file decide (ONNX models and engines fix their input size; a
    different value is refused by ``Detector``). Returns ``y9core.evaluation.result.ValResult``.
    """
    from y9core.data.labels import load_labels, normalised_to_pixels
    from y9core.data.yaml_config import load_data_yaml
    from y9core.evaluation.metrics import evaluate
    from y9core.evaluation.result import ValResult, require_metrics_backend
    from y9deploy import Detector

    if int(batch) < 1:
        raise ValueError(f"batch is {batch}; expected a positive number of images per call.")
    require_metrics_backend()
    cfg = load_data_yaml(data, require=(split,))
    labels = load_labels(cfg.image_files(split), cfg.nc, workers=workers)
    t_start = time.perf_counter()
    preds: list[np.ndarray] = []
    infer_s = 0.0
    with Detector(model, device=device, imgsz=imgsz, conf=conf, iou=iou, max_det=max_det) as det:
        input_hw = det.imgsz
        if len(det.names) != cfg.nc:
            raise DataError(
                f"model {model} predicts {len(det.names)} classes but data.yaml {cfg.yaml_path} has "
                f"nc={cfg.nc}; expected the same number of classes."
            )
        for start in range(0, len(labels.files), batch):
            chunk = labels.files[start : start + batch]
            t0 = time.perf_counter()
            for d in det.predict(list(chunk)):
                preds.append(
                    np.concatenate(
                        [d.xyxy, d.confidence[:, None], d.class_id[:, None].astype(np.float32)], 1
                    ).astype(np.float32)
                )
            infer_s += time.perf_counter() - t0
    targets = [
        normalised_to_pixels(lb, int(hw[1]), int(hw[0])) for lb, hw in zip(labels.labels, labels.shapes)
    ]
    res = evaluate(preds, targets, nc=cfg.nc, names=cfg.names)
    return ValResult.from_evaluation(res, preds, targets, labels.files, seconds=time.perf_counter() - t_start,
                                     infer_seconds=infer_s, imgsz=input_hw)  # fmt: skip
