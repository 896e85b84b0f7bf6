"""Task-aligned assignment of anchors to ground-truth boxes (TOOD, Feng et al. 2021), sparse and memory-lean.

The rule, step by step (each step is one function below):
1. ``candidate_pairs``: the candidates of a box are the anchors whose centres lie strictly inside it.
2. ``alignment``: for each (box, candidate) pair, ``align = score^alpha * IoU^beta`` with ``score`` the
   predicted probability (sigmoid) of the box's class at the anchor and ``IoU`` between the anchor's predicted
   box and the ground-truth box (pixels): plain IoU by default, or CIoU clamped at 0 with ``overlap="ciou"``
   (what the official YOLOv9 assigner uses). The same overlap drives steps 4 and 5.
3. ``select_topk``: each box keeps its ``topk`` candidates of highest ``align`` (ties: lowest anchor index);
   rule "y9" keeps only those with ``align > eps`` (1e-9), rule "official" has no threshold: every candidate
   with a non-zero ``align`` may be kept (on a fresh model most ``align`` values are far below 1e-9: those
   positives get small, non-zero target scores in step 5, and the box and DFL terms act on them).
4. conflicts, an anchor kept by several boxes: rule "y9" (``resolve_conflicts``) gives it to the box, among
   those that kept it, with the highest overlap with the anchor's prediction; rule "official"
   (``official_conflicts``) to the box of highest overlap among ALL boxes of the image, even one that did not
   keep it (nor contain its centre). Ties: the lowest box index, i.e. the earliest row of ``labels`` (the
   official ``argmax`` takes the first of the image's boxes, in the same order).
5. ``normalise``: the target score of a positive is ``align * max_IoU(box) / (max_align(box) + eps)``,
   maxima over the final positives of its box.

Rule "official" is the official YOLOv9 TaskAlignedAssigner's (utils/tal/assigner.py) with CIoU as the overlap;
the one thing it leaves open is the order of equal metrics in ``torch.topk``: a box with fewer than ``topk``
non-zero candidates there also "keeps" some anchors of metric exactly 0, inside or outside the box, depending on
torch's tie order (outside ones are masked afterwards). Here candidates of metric 0 are never kept (``align > 0``).
Such positives carry a zero target score and no loss weight; checked against the official code on random
problems, the positives of non-zero score, their boxes and scores agree (scores to float32 rounding).
Differences from the official implementation, on purpose: it builds dense ``[batch, max_boxes, anchors]``
tensors; this module only touches (box, candidate anchor) pairs (VisDrone boxes cover ~20 anchors of 8400),
chunked so that at most ``max_pairs`` pairs live at once, plus (conflicting anchor, box of its image) pairs
for the official conflict rule.

Host syncs. Every tensor size of rule "y9" is known on the host without reading the device: the candidate count
from the host's labels (``y9train.loss.pairs.pair_counts``), the kept pairs bounded by ``topk`` per box and taken by
``true_positions`` at that bound, the conflicts and target scores computed as masks over those rows
(``TaskAlignedAssigner.assign``: the rows that are not positives carry ``valid`` False and a target score of 0).
So on CUDA the assignment never waits for the device (tests/train/test_loss_syncs.py counts every operator that
would). Rule "official" reads the device for its conflicting anchors (``official_conflicts``: a few reads a batch).
``TaskAlignedAssigner.__call__`` returns the positives alone (``Assignment.compact``, one read of their number).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from y9train.loss.boxes import box_iou, ciou
from y9train.loss.grid import AnchorGrid
from y9train.loss.pairs import anchor_ranges, candidate_pairs, pair_chunks

RULES = ("y9", "official")

# Predicted boxes: dense Tensor[B, A, 4], or a decoder (image[K], anchor[K]) -> Tensor[K, 4] (pixels, xyxy).
BoxSource = torch.Tensor | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

__all__ = [
    "Assignment",
    "BoxSource",
    "TaskAlignedAssigner",
    "alignment",
    "candidate_pairs",
    "normalise",
    "official_conflicts",
    "resolve_conflicts",
    "select_topk",
]


@dataclass
class Assignment:
    """The positive anchors of a batch (P of them), one row per (image, anchor) given to a box.

    Attributes:
        batch_idx (Tensor[P] int64): image of the anchor.
        anchor_idx (Tensor[P] int64): anchor index in the grid (levels concatenated).
        gt_idx (Tensor[P] int64): the assigned box, a row of ``labels``.
        score (Tensor[P] float32): normalised alignment: the target probability of the box's class.
        valid (Tensor[P] bool or None): which rows are positives, for an assignment padded to a size the host
            knows (``TaskAlignedAssigner.assign``; the other rows have a score of 0); None: every row is one.
    """

    batch_idx: torch.Tensor
    anchor_idx: torch.Tensor
    gt_idx: torch.Tensor
    score: torch.Tensor
    valid: torch.Tensor | None = None

    def __len__(self) -> int:
        """Rows (positives, and padding when ``valid`` is set)."""
        return int(self.batch_idx.numel())

    def compact(self) -> Assignment:
        """The positives alone (one read of their number from the device when ``valid`` is set)."""
        if self.valid is None:
            return self
        keep = self.valid.nonzero().squeeze(1)
        return Assignment(self.batch_idx[keep], self.anchor_idx[keep], self.gt_idx[keep], self.score[keep])

    def dense(self, batch_size: int, num_anchors: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(fg (Tensor[B, A] bool), gt_idx (Tensor[B, A] int64, -1 = background), score (Tensor[B, A]))``."""
        if self.valid is not None:
            return self.compact().dense(batch_size, num_anchors)
        dev = self.batch_idx.device
        fg = torch.zeros(batch_size, num_anchors, dtype=torch.bool, device=dev)
        gt = torch.full((batch_size, num_anchors), -1, dtype=torch.long, device=dev)
        score = torch.zeros(batch_size, num_anchors, dtype=torch.float32, device=dev)
        fg[self.batch_idx, self.anchor_idx] = True
        gt[self.batch_idx, self.anchor_idx] = self.gt_idx
        score[self.batch_idx, self.anchor_idx] = self.score
        return fg, gt, score


def true_positions(mask: torch.Tensor, size: int) -> torch.Tensor:
    """``Tensor[size]`` int64: the positions of the first ``size`` True entries of ``mask (Tensor[P] bool)`` in order,
    then -1 (``torch.nonzero_static(mask, size=size, fill_value=-1)[:, 0]``, written with a cumulative sum and a
    sorted search: the size is the caller's, known on the host, and no kernel reads a count back)."""
    seen = torch.cumsum(mask, 0)  # True entries up to and including each position
    want = torch.arange(1, size + 1, device=mask.device, dtype=seen.dtype)
    pos = torch.searchsorted(seen, want)  # the first position holding the k-th True entry (P: none)
    return torch.where(pos < mask.numel(), pos, -1)


def alignment(
    cls_logits: torch.Tensor,
    pred_boxes: BoxSource,
    labels: torch.Tensor,
    gt: torch.Tensor,
    anchor: torch.Tensor,
    alpha: float,
    beta: float,
    overlap: str = "iou",
    fp16_scores: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Step 2: ``(iou (Tensor[P]), align (Tensor[P]))`` of pairs, float32 (``overlap``: "iou" or "ciou").

    ``fp16_scores``: the class probabilities are rounded to fp16 before the power, as the official loss's
    ``sigmoid()`` of fp16 logits returns them under fp16 autocast (its ``pow`` then runs in float32).

    Args:
        cls_logits (Tensor[B, A, nc]): class logits (any float dtype; a transposed view is fine).
        pred_boxes: predicted boxes in pixels (x1, y1, x2, y2): ``Tensor[B, A, 4]``, or a function
            ``(image (Tensor[K]), anchor (Tensor[K])) -> Tensor[K, 4]`` that decodes only the pairs' anchors.
        labels (Tensor[N, 6]): ``(batch_index, class, x1, y1, x2, y2)`` in pixels.
        gt, anchor (Tensor[P]): the pairs.
    """
    img = labels[gt, 0].long()
    pred = pred_boxes(img, anchor) if callable(pred_boxes) else pred_boxes[img, anchor]
    fn = ciou if overlap == "ciou" else box_iou
    iou = fn(pred.float(), labels[gt, 2:6].float()).clamp(min=0)
    score = torch.sigmoid(cls_logits[img, anchor, labels[gt, 1].long()].float())
    if fp16_scores:
        score = score.half().float()
    return iou, score.pow(alpha) * iou.pow(beta)


def select_topk(
    gt: torch.Tensor, align: torch.Tensor, n_boxes: int, topk: int, eps: float | None
) -> torch.Tensor:
    """Step 3: ``Tensor[P] bool``, True for the ``topk`` pairs of highest ``align`` of each box with
    ``align > eps`` (rule "official": ``eps = 0``; None: no condition at all).

    Ties go to the earlier pair (``candidate_pairs`` lists a box's anchors ascending). One stable sort on the key
    ``(box, descending align)`` (non-negative float32 bit patterns order like the floats); a pair's rank is its
    place after the first sorted pair of its box (``searchsorted``: no count of pairs per box, which ``bincount``
    would read from the device).
    """
    desc = 0x7FFFFFFF - align.contiguous().view(torch.int32).long()
    order = torch.sort(gt * (1 << 32) + desc, stable=True).indices
    by_box = gt[order]
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=gt.device) - torch.searchsorted(by_box, by_box)
    keep = rank < topk
    return keep if eps is None else keep & (align > eps)


def resolve_conflicts(
    key: torch.Tensor,
    gt: torch.Tensor,
    iou: torch.Tensor,
    n_keys: int,
    n_boxes: int,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """Step 4: ``Tensor[P] bool``, True for the pair that keeps its anchor.

    ``key (Tensor[P])`` identifies the anchor of an image (``batch_index * A + anchor``); among pairs of one
    key the highest ``iou`` (>= 0) wins, then the lowest ``gt``. ``valid (Tensor[P] bool)``: only these pairs
    compete (the others get False), for rows padded to a size known on the host.
    """
    if valid is not None:
        iou = torch.where(valid, iou, -1.0)
    best = torch.full((n_keys,), -1.0, device=iou.device).scatter_reduce(0, key, iou, "amax")
    top = iou == best[key]
    if valid is not None:
        top = top & valid
    low = torch.full((n_keys,), n_boxes, dtype=torch.long, device=gt.device)
    low = low.scatter_reduce(0, key, torch.where(top, gt, n_boxes), "amin")  # no mask index: no host sync
    return top & (gt == low[key])


def official_conflicts(
    cls_logits: torch.Tensor,
    pred_boxes: BoxSource,
    labels: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    num_anchors: int,
    alpha: float,
    beta: float,
    fp16_scores: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step 4, official rule: ``(gt, anchor, iou, align)`` of the final positives.

    ``pairs``: the selected ``(gt, anchor, iou, align)``. An anchor selected once keeps its pair; an anchor selected
    by several boxes is given to the box of its image with the highest CIoU (clamped at 0) with the anchor's
    prediction, among all boxes of the image (ties: the lowest row), with that pair's CIoU and alignment.
    """
    gt, anchor, iou, align = pairs
    n, b = labels.shape[0], int(cls_logits.shape[0])
    img = labels[gt, 0].long()
    key = img * num_anchors + anchor
    counts = torch.bincount(key, minlength=b * num_anchors)
    single = counts[key] == 1
    multi_keys = torch.nonzero(counts > 1).squeeze(1)
    if multi_keys.numel() == 0:
        return gt, anchor, iou, align
    # every (conflicting anchor, box of the same image) pair; boxes of an image in row order
    box_img = labels[:, 0].long()
    order = torch.sort(box_img, stable=True).indices
    per_img = torch.bincount(box_img, minlength=b)
    first = torch.cumsum(per_img, 0) - per_img
    c_img = torch.div(multi_keys, num_anchors, rounding_mode="floor")
    c_anchor = multi_keys % num_anchors
    reps = per_img[c_img]
    owner = torch.repeat_interleave(torch.arange(multi_keys.numel(), device=gt.device), reps)
    offset = torch.arange(owner.numel(), device=gt.device) - (torch.cumsum(reps, 0) - reps)[owner]
    c_gt = order[first[c_img][owner] + offset]
    c_anchor = c_anchor[owner]
    c_iou, c_align = alignment(
        cls_logits, pred_boxes, labels, c_gt, c_anchor, alpha, beta, "ciou", fp16_scores
    )
    win = resolve_conflicts(owner, c_gt, c_iou, multi_keys.numel(), n)
    return (
        torch.cat((gt[single], c_gt[win])),
        torch.cat((anchor[single], c_anchor[win])),
        torch.cat((iou[single], c_iou[win])),
        torch.cat((align[single], c_align[win])),
    )


def normalise(
    gt: torch.Tensor,
    iou: torch.Tensor,
    align: torch.Tensor,
    n_boxes: int,
    eps: float,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """Step 5: target scores ``align * max_iou[gt] / (max_align[gt] + eps)`` over the final positives (``valid``:
    which rows are positives; the others get 0 and take no part in the maxima)."""
    if valid is not None:
        iou, align = torch.where(valid, iou, 0.0), torch.where(valid, align, 0.0)
    zeros = torch.zeros(n_boxes, device=iou.device)
    max_iou = zeros.scatter_reduce(0, gt, iou, "amax")
    max_align = zeros.scatter_reduce(0, gt, align, "amax")
    return align * max_iou[gt] / (max_align[gt] + eps)


class TaskAlignedAssigner:
    """``assigner(cls_logits, pred_boxes, grid, labels) -> Assignment`` (rule in the module docstring).

    Args:
        topk: candidates kept per box (10).
        alpha, beta: exponents of the class score and the IoU in the alignment metric (0.5, 6.0).
        eps: alignment threshold (rule "y9") and normalisation guard (1e-9).
        max_pairs: at most this many (box, candidate) pairs are processed at once (boxes in chunks).
        overlap: "iou" (default) or "ciou" (clamped at 0, as the official assigner).
        rule: "y9" (threshold, selected boxes compete) or "official" (no threshold, all boxes of the image
            compete for a conflicting anchor; needs ``overlap="ciou"``), see the module docstring.
        fp16_scores: class probabilities rounded to fp16 in the alignment metric (``alignment``).
    """

    def __init__(
        self,
        topk: int = 10,
        alpha: float = 0.5,
        beta: float = 6.0,
        eps: float = 1e-9,
        max_pairs: int = 1 << 22,
        overlap: str = "iou",
        rule: str = "y9",
        fp16_scores: bool = False,
    ):
        if overlap not in ("iou", "ciou"):
            raise ValueError(f"overlap is {overlap!r}; expected 'iou' or 'ciou'.")
        if rule not in RULES:
            raise ValueError(f"assigner rule is {rule!r}; expected one of {', '.join(RULES)}.")
        if rule == "official" and overlap != "ciou":
            raise ValueError(f"assigner rule 'official' uses CIoU; got overlap {overlap!r}, expected 'ciou'.")
        self.topk, self.alpha, self.beta, self.eps, self.max_pairs = topk, alpha, beta, eps, max_pairs
        self.overlap, self.rule, self.fp16_scores = overlap, rule, bool(fp16_scores)

    @torch.no_grad()
    def __call__(
        self, cls_logits: torch.Tensor, pred_boxes: BoxSource, grid: AnchorGrid, labels: torch.Tensor
    ) -> Assignment:
        """Assign anchors to boxes: the positives alone (``assign`` then ``Assignment.compact``).

        Args:
            cls_logits (Tensor[B, A, nc]): class logits.
            pred_boxes: predicted boxes in pixels (x1, y1, x2, y2): ``Tensor[B, A, 4]`` or a decoder of the
                candidate anchors only (see ``alignment``).
            grid: the anchor grid (A anchors).
            labels (Tensor[N, 6]): ``(batch_index, class, x1, y1, x2, y2)`` in pixels, validated by the caller.
        """
        return self.assign(cls_logits, pred_boxes, grid, labels).compact()

    @torch.no_grad()
    def assign(
        self,
        cls_logits: torch.Tensor,
        pred_boxes: BoxSource,
        grid: AnchorGrid,
        labels: torch.Tensor,
        pair_counts: Sequence[int] | None = None,
    ) -> Assignment:
        """The assignment with rows padded to a size the host knows (``Assignment.valid`` marks the positives).

        ``pair_counts``: the candidate pairs of each box (``y9train.loss.pairs.pair_counts`` of the host's labels);
        with them, rule "y9" never reads the device; without, they are read from it once. Arguments otherwise as
        ``__call__``."""
        n, (b, a) = labels.shape[0], cls_logits.shape[:2]
        dev = cls_logits.device
        ranges = anchor_ranges(labels[:, 2:6], grid)
        if pair_counts is None:
            pair_counts = (ranges[2] * ranges[3]).sum(1).tolist()
        metric = (self.alpha, self.beta, self.overlap, self.fp16_scores)
        eps = 0.0 if self.rule == "official" else self.eps
        kept: list[tuple[torch.Tensor, ...]] = []
        for first, last, total in pair_chunks(pair_counts, self.max_pairs):
            if total == 0:
                continue
            gt, anchor = candidate_pairs(ranges, grid, first, last, total)
            iou, align = alignment(cls_logits, pred_boxes, labels, gt, anchor, *metric)
            sel = select_topk(gt - first, align, last - first, self.topk, eps)
            # at most topk pairs per box: taken at that bound, the rows beyond the kept ones marked invalid
            rows = true_positions(sel, min(self.topk * (last - first), total))
            ok, rows = rows >= 0, rows.clamp(min=0)
            kept.append((gt[rows], anchor[rows], iou[rows], align[rows], ok))
        if not kept:
            empty = torch.zeros(0, dtype=torch.long, device=dev)
            return Assignment(empty, empty, empty, torch.zeros(0, device=dev))
        gt, anchor, iou, align, ok = (torch.cat(t) for t in zip(*kept))
        if self.rule == "official":
            keep = ok.nonzero().squeeze(1)
            pairs = (gt[keep], anchor[keep], iou[keep], align[keep])
            gt, anchor, iou, align = official_conflicts(
                cls_logits, pred_boxes, labels, pairs, a, self.alpha, self.beta, self.fp16_scores
            )
            img = labels[gt, 0].long()
            return Assignment(img, anchor, gt, normalise(gt, iou, align, n, self.eps))
        img = labels[gt, 0].long()
        win = resolve_conflicts(img * a + anchor, gt, iou, b * a, n, valid=ok)
        return Assignment(img, anchor, gt, normalise(gt, iou, align, n, self.eps, valid=win), valid=win)
