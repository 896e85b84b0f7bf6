"""The YOLOv9 training loss: task-aligned assignment, CIoU + DFL box losses, BCE class loss, PGI branches.

Per branch (three maps ``[B, 4 * reg_max + nc, H_l, W_l]`` for strides 8/16/32; the layout of ``y9train.models.head``):
- the anchors are assigned from the branch's own (detached) predictions by ``TaskAlignedAssigner``;
- ``T = max(sum of the positives' target scores, 1)`` normalises every term (``normaliser``: a distributed run
  replaces it so that ``T`` covers the whole global batch, see ``y9train.run.distributed``);
- class: BCE-with-logits summed over all anchors and classes, against the target scores (the assigned box's
  class gets the normalised alignment, everything else 0) with label smoothing ``eps`` applied to them:
  ``target * (1 - eps) + eps / 2``; divided by ``T`` (the unsmoothed sum). It is computed sparsely:
  ``sum softplus(x) - sum x * target``, so no dense ``[B, A, nc]`` target tensor exists;
- box: ``sum over positives of (1 - CIoU(pred, gt)) * score / T``, boxes in grid units of their level;
- DFL: ``sum over positives of mean over 4 sides of DFL(logits, distance) * score / T`` with the target
  distances (grid units) clamped to ``[0, reg_max - 1.01]``.
Dual (yolov9-*) output: ``parts = 1.0 * main + aux_weight * aux`` per term. Gains: box 7.5, cls 0.5, dfl 1.5.
``total = batch_size * (gained box + gained cls + gained dfl)`` is what ``backward()`` gets; the returned
components are the gained terms (not multiplied by the batch size), detached.

Precision: float32 throughout by default, whatever the dtype of the network's outputs. ``fp16=True`` rounds where
the official loss (utils/loss_tal_dual.py), computed inside train_dual.py's fp16 autocast, rounds: the decoded
distances (``dfl_decode_fp16``), the predicted boxes (fp16 anchor points minus fp16 distances, so the box loss's
CIoU takes the predicted widths, heights, area and aspect angle in fp16 and the rest in float32, by torch's type
promotion), the assigner's class probabilities, and the class targets of the BCE. The normaliser, the box and DFL
weights and the DFL targets stay float32, as there.

Host syncs: none with the default assigner rule when ``labels`` come on the host (the loader's pinned batch): they
are checked there and copied to the device without waiting, the assigner's sizes are counted from them
(``y9train.loss.pairs``), and the predicted boxes are decoded for every anchor (no selection by a size read from
the device). Labels already on the device are read back once per call; rule "official" reads a few sizes.
tests/train/test_loss_syncs.py counts every operator that would make the host wait on CUDA.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from y9train.loss.assigner import Assignment, TaskAlignedAssigner
from y9train.loss.boxes import bbox2dist, ciou, dist2bbox
from y9train.loss.dfl import dfl_decode, dfl_decode_fp16, dfl_loss
from y9train.loss.grid import AnchorGrid
from y9train.loss.pairs import pair_counts

__all__ = ["DetectionLoss", "batch_normaliser"]


def batch_normaliser(score_sum: torch.Tensor) -> torch.Tensor:
    """``T = max(score_sum, 1)``: the loss normaliser of one batch from its sum of target scores."""
    return score_sum.clamp(min=1.0)


class DetectionLoss:
    """``loss(preds, labels) -> (total, {"box", "cls", "dfl"})`` for train-mode model outputs.

    Args:
        nc: number of classes.
        reg_max: DFL bins per box side (16).
        strides: stride of each level, pixels.
        box_gain, cls_gain, dfl_gain: term weights (7.5, 0.5, 1.5).
        label_smoothing: ``eps`` of the class targets (an attribute the trainer may change between steps).
        aux_weight: weight of the auxiliary branch of dual models (0.25); the main branch weighs 1.0.
        topk, alpha, beta: task-aligned assigner settings (10, 0.5, 6.0).
        assigner_overlap: "ciou" (default, as the official YOLOv9 assigner: CIoU clamped at 0) or "iou" in the
            alignment metric.
        assigner_rule: "y9" (default) or "official": the candidate and conflict rules of the assigner
            (``y9train.loss.assigner``; "official" needs CIoU).
        max_pairs: memory bound of the assigner (box, candidate) pairs processed at once.
        fp16: round as the official loss does inside fp16 autocast (the module docstring); ``Hyp.loss_fp16``,
            which the trainer turns on only for a run under fp16 autocast.
    """

    def __init__(
        self,
        nc: int,
        *,
        reg_max: int = 16,
        strides: Sequence[float] = (8.0, 16.0, 32.0),
        box_gain: float = 7.5,
        cls_gain: float = 0.5,
        dfl_gain: float = 1.5,
        label_smoothing: float = 0.0,
        aux_weight: float = 0.25,
        topk: int = 10,
        alpha: float = 0.5,
        beta: float = 6.0,
        max_pairs: int = 1 << 22,
        assigner_overlap: str = "ciou",
        assigner_rule: str = "y9",
        fp16: bool = False,
    ):
        if nc < 1:
            raise ValueError(f"nc is {nc}; expected at least one class.")
        self.nc, self.reg_max, self.strides = int(nc), int(reg_max), tuple(float(s) for s in strides)
        self.gains = (float(box_gain), float(cls_gain), float(dfl_gain))
        self.label_smoothing = float(label_smoothing)
        self.aux_weight = float(aux_weight)
        self.fp16 = bool(fp16)
        self.assigner = TaskAlignedAssigner(
            topk,
            alpha,
            beta,
            max_pairs=max_pairs,
            overlap=assigner_overlap,
            rule=assigner_rule,
            fp16_scores=fp16,
        )
        self._grids: dict[tuple, AnchorGrid] = {}
        self._gain_t: dict[torch.device, torch.Tensor] = {}  # the gains on each device, copied there once
        #: ``T`` from the batch's sum of target scores (Tensor[] -> Tensor[]); replaceable, see the module docstring
        self.normaliser = batch_normaliser

    @classmethod
    def from_model(cls, model, **kwargs) -> DetectionLoss:
        """A loss for a ``y9train.models`` model: its ``nc``, ``reg_max`` and ``stride``."""
        return cls(model.nc, reg_max=model.reg_max, strides=[float(s) for s in model.stride], **kwargs)

    def __call__(self, preds, labels: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Loss of a batch.

        Args:
            preds: the train-mode output: ``list`` of branches (main first, then aux), each a list of per-level
                maps ``Tensor[B, 4 * reg_max + nc, H_l, W_l]``; a single branch (list of maps) is accepted.
            labels (Tensor[N, 6]): ``(batch_index, class, x1, y1, x2, y2)`` in input pixels; on the host (as the
                loader yields them, pinned) the loss never waits for the device, on the device it reads them once.
        Returns:
            ``(total (Tensor[]), {"box", "cls", "dfl"}: Tensor[] each, detached)``, see the module docstring.
        """
        branches = [preds] if isinstance(preds[0], torch.Tensor) else list(preds)
        if len(branches) > 2:
            raise ValueError(
                f"got {len(branches)} prediction branches; expected 1 (gelan) or 2 (yolov9, main first)."
            )
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing is {self.label_smoothing}; expected a value in [0, 1).")
        feats0 = branches[0][0]
        batch = int(feats0.shape[0])
        labels, host = self._check_labels(labels, batch, feats0.device)
        weights = (1.0, self.aux_weight)[: len(branches)]
        with torch.autocast(feats0.device.type, enabled=False):
            parts = sum(w * self.branch_loss(f, labels, host) for w, f in zip(weights, branches, strict=True))
            parts = parts * self._gains(parts.device)
        total = parts.sum() * batch
        box, cls, dfl = parts.detach()
        return total, {"box": box, "cls": cls, "dfl": dfl}

    def branch_loss(
        self, feats: Sequence[torch.Tensor], labels: torch.Tensor, host: np.ndarray | None = None
    ) -> torch.Tensor:
        """``Tensor[3]``: (box, cls, dfl) of one branch, before gains. ``labels`` already checked, on the maps'
        device; ``host``: the same labels on the host (``ndarray[N, 6]`` float32), from which the assigner's sizes
        are counted (None: read from the device)."""
        r, nc = self.reg_max, self.nc
        if len(feats) != len(self.strides) or any(f.shape[1] != 4 * r + nc for f in feats):
            got = [tuple(f.shape) for f in feats]
            raise ValueError(
                f"prediction maps have shapes {got}; expected {len(self.strides)} maps [B, {4 * r + nc}, H, W] "
                f"(4 * reg_max {r} + nc {nc})."
            )
        grid = self._grid(feats)
        x = torch.cat([f.flatten(2) for f in feats], 2)  # [B, 4R + nc, A]
        box_logits, cls_logits = x.split((4 * r, nc), 1)
        counts = pair_counts(host[:, 2:6], grid) if host is not None else None
        boxes = self.decoded_boxes(box_logits.detach(), grid)
        asg = self.assigner.assign(cls_logits.detach().transpose(1, 2), boxes, grid, labels, counts)
        norm = self.normaliser(asg.score.sum())  # rows that are not positives have a score of 0 ...
        cls = self._class_loss(cls_logits, asg, labels) / norm
        if len(asg) == 0:
            zero = box_logits.sum() * 0.0
            return torch.stack([zero, cls, zero])
        logits = box_logits[asg.batch_idx, :, asg.anchor_idx]  # [P, 4R]; ... and add 0 to each term below
        pred = self._decode(logits, grid, asg.anchor_idx)
        points, stride = grid.points[asg.anchor_idx], grid.strides[asg.anchor_idx, None]
        logits = logits.float().view(-1, 4, r)
        target = labels[asg.gt_idx, 2:6] / stride
        box = ((1.0 - ciou(pred, target)) * asg.score).sum() / norm
        dfl = (dfl_loss(logits, bbox2dist(points, target, r)).mean(-1) * asg.score).sum() / norm
        return torch.stack([box, cls, dfl])

    def _class_loss(self, cls_logits: torch.Tensor, asg: Assignment, labels: torch.Tensor) -> torch.Tensor:
        """Summed BCE-with-logits against smoothed sparse targets; ``cls_logits (Tensor[B, nc, A])``."""
        eps = self.label_smoothing
        xf = cls_logits.float()
        x_pos = xf[asg.batch_idx, labels[asg.gt_idx, 1].long(), asg.anchor_idx]
        target = asg.score.half().float() if self.fp16 else asg.score
        loss = F.softplus(xf).sum() - (1.0 - eps) * (x_pos * target).sum()
        if eps:
            loss = loss - (eps / 2.0) * xf.sum()
        return loss

    def decoded_boxes(self, box_logits: torch.Tensor, grid: AnchorGrid) -> torch.Tensor:
        """``Tensor[B, A, 4]``: the predicted box (x1, y1, x2, y2, pixels; float32, or float16 in grid units times
        the float32 strides with ``fp16``) of every anchor of ``box_logits (Tensor[B, 4R, A])``: all anchors, so
        that no size depends on which ones are candidates."""
        b, _, a = box_logits.shape
        flat = box_logits.transpose(1, 2).reshape(b * a, 4 * self.reg_max)
        anchors = torch.arange(a, device=box_logits.device).repeat(b)
        boxes = self._decode(flat, grid, anchors) * grid.strides[anchors, None]
        return boxes.view(b, a, 4)

    def _gains(self, device: torch.device) -> torch.Tensor:
        if device not in self._gain_t:
            self._gain_t[device] = torch.tensor(self.gains, device=device)
        return self._gain_t[device]

    def _decode(self, logits: torch.Tensor, grid: AnchorGrid, anchor: torch.Tensor) -> torch.Tensor:
        """Boxes (x1, y1, x2, y2) in grid units: ``logits (Tensor[K, 4R])`` at ``anchor (Tensor[K])``; float32,
        or float16 with ``fp16`` (anchor points ``i + 0.5`` are exact in fp16)."""
        logits = logits.view(-1, 4, self.reg_max)
        if self.fp16:
            return dist2bbox(dfl_decode_fp16(logits), grid.points[anchor].half(), xywh=False)
        return dist2bbox(dfl_decode(logits.float()), grid.points[anchor], xywh=False)

    def _grid(self, feats: Sequence[torch.Tensor]) -> AnchorGrid:
        key = (tuple(tuple(f.shape[2:]) for f in feats), feats[0].device)
        if key not in self._grids:
            self._grids[key] = AnchorGrid.from_feats(feats, self.strides)
        return self._grids[key]

    def _check_labels(
        self, labels: torch.Tensor, batch: int, device: torch.device
    ) -> tuple[torch.Tensor, np.ndarray]:
        """``(labels as float32 on device, the same on the host as ndarray[N, 6])`` after checking shape,
        finiteness, batch indices and classes (on the host: labels given on the device are read back once)."""
        if not isinstance(labels, torch.Tensor) or labels.ndim != 2 or labels.shape[1] != 6:
            shape = tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__
            raise ValueError(
                f"labels has shape {shape}; expected Tensor[N, 6] (batch_index, class, x1, y1, x2, y2)."
            )
        if labels.device.type == "cpu":
            host = np.asarray(labels.numpy() if not labels.requires_grad else labels.detach().numpy(), np.float32)
            on_device = labels.to(device=device, dtype=torch.float32, non_blocking=True)
        else:
            on_device = labels.to(device=device, dtype=torch.float32)
            host = on_device.cpu().numpy()
        if host.shape[0] == 0:
            return on_device, host
        b, c = host[:, 0], host[:, 1]
        with np.errstate(invalid="ignore"):
            bad = (
                ~np.isfinite(host).all(1)
                | (b != np.round(b)) | (b < 0) | (b >= batch)
                | (c != np.round(c)) | (c < 0) | (c >= self.nc)
            )  # fmt: skip
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"labels row {row} is {host[row].tolist()}; expected a batch index in [0, {batch}), "
                f"a class in [0, {self.nc}) and finite pixel coordinates."
            )
        return on_device, host
