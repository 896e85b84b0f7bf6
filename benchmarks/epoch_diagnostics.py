"""Why does a run's per-epoch mAP swing while its training loss falls smoothly? A Trainer callback that, after each
epoch's own validation, scores two more models on the same eval images and writes one row per epoch to a CSV
(flushed as it goes):

- ``raw``: the model being trained (not its EMA), in eval mode;
- ``ema_pbn``: a copy of the EMA whose BatchNorm running statistics are re-estimated ("precise BN": cumulative
  averages, momentum None) over ``bn_batches`` fresh training batches (the training augmentation of that epoch),
  forward only, no gradients.

With the trainer's ``metrics/map50_95`` (the EMA as it is) beside them: if ``ema_pbn`` stays up on the epochs where
the EMA falls, the falls are stale BatchNorm statistics; if ``raw`` falls with it, the weights themselves moved.
It also records the EMA's decay and, per BatchNorm layer, how far the EMA's running variance is from the
re-estimated one (median and max of ``|log(var_ema / var_pbn)|``).

Used by ``bench_accuracy.py run --diagnose`` (y9 runs only). Not part of y9's library: it reads a Trainer's public
attributes (model, ema, train_ds, val_loader, device, amp_dtype, channels_last, config, data_cfg, epoch).
"""

from __future__ import annotations

import contextlib
import copy
import csv
import math
from pathlib import Path

FIELDS = ["epoch", "ema_decay", "ema_updates", "raw_map50_95", "raw_map50", "ema_pbn_map50_95", "ema_pbn_map50",
          "bn_logvar_med", "bn_logvar_max"]  # fmt: skip


class EpochDiagnostics:
    """``Trainer(config, callbacks={"on_epoch_end": [EpochDiagnostics(path)]})``; from epoch ``start`` (1-based)."""

    def __init__(self, path: Path, bn_batches: int = 8, start: int = 5):
        self.path = Path(path)
        self.bn_batches = int(bn_batches)
        self.start = int(start)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w", newline="") as f:
            csv.writer(f).writerow(FIELDS)

    def __call__(self, tr) -> None:
        import torch

        if tr.val_loader is None or tr.epoch + 1 < self.start:
            return
        from y9train.validate import run_validation

        kw = dict(device=tr.device, nc=tr.data_cfg.nc, conf=tr.config.conf, iou=tr.config.iou,
                  max_det=tr.config.max_det, amp_dtype=tr.amp_dtype, channels_last=tr.channels_last)  # fmt: skip
        row = {"epoch": tr.epoch + 1, "ema_decay": tr.ema.decay * (1 - math.exp(-tr.ema.updates / tr.ema.tau)),
               "ema_updates": tr.ema.updates}  # fmt: skip
        raw = run_validation(tr.model, tr.val_loader, **kw).metrics  # restores train mode itself
        row["raw_map50_95"], row["raw_map50"] = raw["map50_95"], raw["map50"]

        pbn = copy.deepcopy(tr.ema.module)
        bns = [m for m in pbn.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        before = [m.running_var.detach().clone() for m in bns]
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the batches below
        pbn.train()
        from y9train.data import build_dataloader

        loader = build_dataloader(tr.train_ds, tr.config.batch, workers=2, persistent_workers=False)
        autocast = torch.autocast(tr.device.type, dtype=tr.amp_dtype) if tr.amp_dtype else contextlib.nullcontext()
        with torch.no_grad(), autocast:
            for i, batch in enumerate(loader):
                if i >= self.bn_batches:
                    break
                imgs = batch["img"].to(tr.device, non_blocking=True)
                if tr.channels_last:
                    imgs = imgs.contiguous(memory_format=torch.channels_last)
                pbn(imgs.float().div_(255))
        del loader
        logs = torch.stack([
            (b.clamp_min(1e-12) / m.running_var.clamp_min(1e-12)).log().abs().median() for b, m in zip(before, bns)
        ])  # fmt: skip
        row["bn_logvar_med"], row["bn_logvar_max"] = float(logs.median()), float(logs.max())
        res = run_validation(pbn, tr.val_loader, **kw).metrics
        row["ema_pbn_map50_95"], row["ema_pbn_map50"] = res["map50_95"], res["map50"]
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([row[k] for k in FIELDS])
        tr.reporter.info(
            f"diag epoch {row['epoch']}: raw {row['raw_map50_95']:.3f}  ema+preciseBN {row['ema_pbn_map50_95']:.3f}  "
            f"decay {row['ema_decay']:.3f}  |log var ratio| med {row['bn_logvar_med']:.3f} max {row['bn_logvar_max']:.3f}"
        )

