"""Validation: model in eval mode over a letterboxed loader, post-processing on the device, boxes scaled back to
source pixels, COCO metrics from ``y9core.evaluation.metrics.evaluate``.

The metrics need ``faster-coco-eval`` (imported lazily; ``require_metrics_backend`` checks for it up front so a
training run does not fail after its first epoch).
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
from torch import nn

from y9core.evaluation.result import ValResult, require_metrics_backend


def _to_source(rows: torch.Tensor, ratio_pad, orig_hw, cols: slice) -> torch.Tensor:
    """Boxes in network-input pixels -> source-image pixels, clipped to the image (a new tensor)."""
    (rw, rh), (left, top) = ratio_pad
    h0, w0 = orig_hw
    out = rows.clone()
    c = range(cols.start, cols.stop)
    xs, ys = [c[0], c[2]], [c[1], c[3]]
    out[:, xs] = ((out[:, xs] - left) / rw).clamp(0, w0)
    out[:, ys] = ((out[:, ys] - top) / rh).clamp(0, h0)
    return out


def _targets(batch: dict, dataset, index: dict[str, int] | None) -> list[np.ndarray]:
    """Ground truth of a batch in source pixels: straight from the dataset's labels when it can say (no round
    trip through the letterbox), else the batch labels mapped back with ``ratio_pad``."""
    if index is not None:
        return [dataset.source_boxes(index[str(p)]) for p in batch["paths"]]
    labels, out = batch["labels"], []
    for i, (rp, hw) in enumerate(zip(batch["ratio_pad"], batch["orig_hw"], strict=True)):
        rows = labels[labels[:, 0] == i, 1:].float()
        out.append(_to_source(rows, rp, hw, slice(1, 5)).numpy())
    return out


@torch.no_grad()
def run_validation(
    model: nn.Module,
    loader,
    *,
    device: torch.device,
    nc: int,
    names: list[str] | None = None,
    conf: float = 0.001,
    iou: float = 0.7,
    max_det: int = 300,
    amp_dtype: torch.dtype | None = None,
    channels_last: bool = False,
    autotune: bool = True,
) -> ValResult:
    """Validate ``model`` (switched to eval mode here) on ``loader`` (batches of the training contract).

    Detections come from ``y9core.post.rows.postprocess`` (conf, iou, max_det as the official val: 0.001, 0.7,
    300) on the device, by the implementation ``choose_post`` picks there (the Detector's rule); predictions and labels are mapped back to source pixels with each image's
    ``ratio_pad`` before ``evaluate`` (COCO's maxDets 100 per image and class); the ground truth comes from the
    dataset's labels in source pixels (``YoloDataset.source_boxes``). ``autotune`` False switches cuDNN's autotuning
    off for the loop (its heuristics choose; training's setting is put back afterwards).
    """
    from y9core.evaluation.metrics import evaluate
    from y9core.post.rows import postprocess

    require_metrics_backend()
    was_training = model.training
    model.eval()
    preds: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    files: list[str] = []
    t_start = time.perf_counter()
    infer_s = 0.0
    autocast = (
        torch.autocast(device.type, dtype=amp_dtype) if amp_dtype is not None else nullcontext()
    )  # fmt: skip
    dataset = getattr(loader, "dataset", None)
    index = {str(p): i for i, p in enumerate(dataset.files)} if hasattr(dataset, "source_boxes") else None
    tuned = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = tuned and autotune
    try:
        for batch in loader:
            imgs = batch["img"].to(device, non_blocking=True)
            if channels_last:
                imgs = imgs.contiguous(memory_format=torch.channels_last)
            imgs = imgs.float().div_(255)
            t0 = time.perf_counter()
            with autocast:
                out = model(imgs)
            rows = postprocess(out.float(), conf=conf, iou=iou, max_det=max_det)
            dets = [torch.from_numpy(r) for r in rows]
            dets = [
                _to_source(d, rp, hw, slice(0, 4))
                for d, rp, hw in zip(dets, batch["ratio_pad"], batch["orig_hw"], strict=True)
            ]
            counts = [len(d) for d in dets]
            flat = torch.cat(dets).cpu().numpy() if dets else np.zeros((0, 6), np.float32)
            infer_s += time.perf_counter() - t0
            preds.extend(np.split(flat, np.cumsum(counts)[:-1]))
            targets.extend(_targets(batch, dataset, index))
            files.extend(str(p) for p in batch["paths"])
    finally:
        torch.backends.cudnn.benchmark = tuned
        model.train(was_training)
    res = evaluate(preds, targets, nc=nc, names=names)
    seconds = time.perf_counter() - t_start
    return ValResult.from_evaluation(res, preds, targets, files, seconds=seconds, infer_seconds=infer_s)


def val_checkpoint(
    data: str | Path,
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
    amp: str = "auto",
) -> ValResult:
    """``y9 val``: a checkpoint (y9 or official) on a split of a data.yaml, through the training-time loader and
    validation loop (the numbers training reports). ``imgsz``: None = the size the model was trained at (its
    facts); another size is said once (``FactsWarning``). Letterbox (no ``auto`` padding, frames scaled to fit,
    grey 114), thresholds (conf 0.001, IoU 0.7, 300 detections, one label per box) and COCO evaluation are those of
    ``y9deploy.validate_deployed.val_deployed`` for ONNX models and engines, so both agree on one model."""
    import warnings

    from y9core.model_facts import FactsWarning, size_notice
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.deploy import deploy_model
    from y9train.checkpoints.facts import facts_of
    from y9train.data import YoloDataset, build_dataloader, load_data_yaml
    from y9train.setup.device_model import check_model_fits_data, resolve_amp, resolve_device

    require_metrics_backend()
    data_cfg = load_data_yaml(data, require=(split,))
    dev = resolve_device(device)
    net = load_checkpoint(model)
    check_model_fits_data(net, data_cfg, str(model), allow_new_head=False)
    facts = facts_of(net, where=str(model))
    net = deploy_model(net)  # as deployed (and as the official val.py runs it): same outputs, faster
    trained = max(facts.imgsz)  # square validation: the loader letterboxes to imgsz x imgsz
    if imgsz is None:
        imgsz = trained
    elif int(imgsz) != trained:  # the size a model trained at h x w validates at is max(h, w): no notice for it
        notice = size_notice(facts, (int(imgsz), int(imgsz)), f"validation of {Path(model).name}")
        if notice is not None:
            warnings.warn(notice, FactsWarning, stacklevel=2)
    dataset = YoloDataset.from_yaml(data_cfg, split, augment=False, imgsz=imgsz, workers=workers)
    loader = build_dataloader(dataset, batch, workers=min(workers, 8), persistent_workers=False)
    amp_dtype, _ = resolve_amp(amp, dev)
    cuda = dev.type == "cuda"
    net = net.to(dev)  # deploy_model's channels_last layout kept
    result = run_validation(
        net,
        loader,
        device=dev,
        nc=data_cfg.nc,
        names=data_cfg.names,
        conf=conf,
        iou=iou,
        max_det=max_det,
        amp_dtype=amp_dtype,
        channels_last=cuda,
    )
    return dataclasses.replace(result, imgsz=(int(imgsz), int(imgsz)))  # square: the loader's letterbox
