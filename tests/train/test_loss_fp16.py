"""``DetectionLoss(fp16=True)`` (``Hyp.loss_fp16``) against the official loss's dtype flow under fp16 autocast.

train_dual.py computes ``utils/loss_tal_dual.py`` inside ``torch.cuda.amp.autocast``, on the network's fp16 maps.
The CUDA autocast rules that matter there (torch's autocast op lists): ``softmax``, ``pow``, ``sum``,
``binary_cross_entropy_with_logits`` and ``cross_entropy`` run in float32; ``matmul`` takes fp16 operands and
returns fp16; every other op keeps its inputs' dtype with torch's type promotion. So in the official loss:
- ``bbox_decode``: ``pred_dist.softmax(3)`` is float32, ``.matmul(proj.half())`` fp16;
- ``make_anchors`` builds the anchor points in the maps' dtype (fp16, exact), so ``dist2bbox`` gives fp16 boxes;
- the assigner gets ``pred_scores.sigmoid()`` (fp16) and the boxes cast to float32; its ``pow`` runs in float32;
- the BCE gets ``target_scores.to(fp16)``; the normaliser and the box weights use the float32 target scores;
- ``bbox_iou(pred fp16, target fp32, CIoU=True)``: the prediction's width, height, area and ``atan(w / h)`` are fp16,
  everything mixed with the target is float32.
The reference below writes that flow out densely, with torch's own fp16 kernels (half matmul, half sigmoid), and
the official CIoU formula; the assignment comes from y9's assigner (checked against the official elsewhere).
"""

from __future__ import annotations

import io
import math

import pytest
import torch
import torch.nn.functional as F

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401  (fixture)
from y9train.loop.trainer import Trainer
from y9train.loss import DetectionLoss
from y9train.loss.assigner import alignment
from y9train.loss.dfl import dfl_decode_fp16
from y9train.loss.grid import AnchorGrid
from y9train.reports.reporting import Reporter

NC, R, STRIDES = 3, 16, (8.0, 16.0, 32.0)
LABELS = torch.tensor(
    [[0, 1, 10, 12, 60, 70], [0, 0, 40, 30, 120, 100], [0, 2, 44, 36, 110, 96], [1, 1, 5, 5, 25, 30],
     [1, 0, 64, 64, 127, 127], [1, 2, 80, 10, 90, 30], [1, 0, 30, 40, 100, 120]], dtype=torch.float32)  # fmt: skip


def _maps16(seed: int = 0, confident: bool = False, batch: int = 2, imgsz: int = 128) -> list[torch.Tensor]:
    """fp16 head maps, as a network under fp16 autocast emits them (box logits scaled so boxes span a few cells).
    ``confident``: class logits near -8, so that the positives' targets, not the negatives' softplus, carry the
    class term (its fp16 target rounding then shows above float32 summation noise)."""
    g = torch.Generator().manual_seed(seed)
    maps = []
    for s in STRIDES:
        m = torch.randn(batch, 4 * R + NC, imgsz // int(s), imgsz // int(s), generator=g)
        m[:, : 4 * R] *= 2.5
        if confident:
            m[:, 4 * R :] = m[:, 4 * R :] * 0.5 - 8.0
        maps.append(m.half().requires_grad_())
    return maps


def _official_ciou(b1: torch.Tensor, b2: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """The official ``bbox_iou(box1, box2, xywh=False, CIoU=True)`` formula, operation by operation."""
    b1_x1, b1_y1, b1_x2, b1_y2 = b1.unbind(-1)
    b2_x1, b2_y1, b2_x2, b2_y2 = b2.unbind(-1)
    w1, h1 = b1_x2 - b1_x1, b1_y2 - b1_y1 + eps
    w2, h2 = b2_x2 - b2_x1, b2_y2 - b2_y1 + eps
    inter = (torch.min(b1_x2, b2_x2) - torch.max(b1_x1, b2_x1)).clamp(0) * (
        torch.min(b1_y2, b2_y2) - torch.max(b1_y1, b2_y1)
    ).clamp(0)
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    cw = torch.max(b1_x2, b2_x2) - torch.min(b1_x1, b2_x1)
    ch = torch.max(b1_y2, b2_y2) - torch.min(b1_y1, b2_y1)
    c2 = (cw**2 + ch**2 + eps).float()  # pow: float32 under autocast
    rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 + (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4
    v = (4 / math.pi**2) * torch.pow((torch.atan(w2 / h2) - torch.atan(w1 / h1)).float(), 2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


def _official_fp16_flow(
    maps: list[torch.Tensor], labels: torch.Tensor, round_targets: bool = True
) -> torch.Tensor:
    """(box, cls, dfl) of one branch, before gains, as utils/loss_tal_dual.py computes it under fp16 autocast
    (``round_targets=False``: the same but the BCE's targets left float32, to show that the test sees them)."""
    grid = AnchorGrid.from_feats(maps, STRIDES)
    b = maps[0].shape[0]
    x = torch.cat([m.flatten(2) for m in maps], 2)  # fp16 [B, 4R + nc, A]
    pred_distri, pred_scores = x[:, : 4 * R].transpose(1, 2), x[:, 4 * R :].transpose(1, 2)  # [B, A, .]
    a = pred_distri.shape[1]
    dist = pred_distri.reshape(b, a, 4, R).float().softmax(3).half() @ torch.arange(R).half()  # half matmul
    anchors = grid.points.half()  # make_anchors in the maps' dtype
    pred_bboxes = torch.cat((anchors - dist[..., :2], anchors + dist[..., 2:]), -1)  # fp16, grid units
    assert pred_bboxes.dtype == torch.float16
    stride16 = grid.strides.half()[:, None]
    scorer = DetectionLoss(NC, assigner_rule="official", fp16=True).assigner
    asg = scorer(pred_scores.detach(), (pred_bboxes.detach() * stride16).float(), grid, labels)
    fg, gt, score = asg.dense(b, a)
    target_scores = torch.zeros(b, a, NC)
    target_scores[fg, labels[gt[fg], 1].long()] = score[fg]
    tss = max(target_scores.sum(), torch.tensor(1.0))
    cls = (
        F.binary_cross_entropy_with_logits(
            pred_scores.float(),
            target_scores.half().float() if round_targets else target_scores,
            reduction="none",
        ).sum()
        / tss
    )
    target = labels[gt[fg], 2:6] / stride16[fg.nonzero()[:, 1]].float()
    weight = target_scores.sum(-1)[fg]
    iou = _official_ciou(pred_bboxes[fg], target)
    box = ((1.0 - iou) * weight).sum() / tss
    pts = grid.points[fg.nonzero()[:, 1]]
    t = torch.cat((pts - target[:, :2], target[:, 2:] - pts), -1).clamp(0, R - 1.01)
    logits = pred_distri[fg].reshape(-1, 4, R).float()
    left = t.long()
    ce = lambda k: F.cross_entropy(logits.reshape(-1, R), k.reshape(-1), reduction="none").view(k.shape)  # noqa: E731
    dfl = ((ce(left) * (left + 1 - t) + ce(left + 1) * (t - left)).mean(-1) * weight).sum() / tss
    return torch.stack([box, cls, dfl])


def test_fp16_decode_is_the_half_matmul_of_autocast_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(20000, 4, R, generator=g) * 3).half().requires_grad_()
    got = dfl_decode_fp16(x)
    x2 = x.detach().clone().requires_grad_()
    ref = x2.float().softmax(-1).half() @ torch.arange(R).half()  # torch's fp16 matmul
    assert got.dtype == torch.float16
    off = (got != ref).sum().item()
    assert off <= 10 and (got.float() - ref.float()).abs().max() <= 2**-7  # a summation tie at most, one ulp
    exact = x.detach().float().softmax(-1) @ torch.arange(R, dtype=torch.float32)
    assert (exact - got.float()).abs().max() > 1e-3  # the rounding is there
    up = torch.randn(20000, 4, generator=g).half()
    got.backward(up)
    ref.backward(up)
    assert x.grad.dtype == torch.float16 and torch.equal(x.grad, x2.grad)


def test_fp16_scores_are_the_half_sigmoid_in_the_alignment_metric():
    g = torch.Generator().manual_seed(1)
    logits = (torch.randn(1, 50, NC, generator=g) * 4).half()
    boxes = torch.tensor([[10.0, 10.0, 40.0, 40.0]]).expand(1, 50, 4) + torch.rand(1, 50, 4, generator=g)
    labels = torch.tensor([[0, 2, 12.0, 11.0, 41.0, 38.0]])
    gt, anchor = torch.zeros(50, dtype=torch.long), torch.arange(50)
    iou, got = alignment(logits, boxes, labels, gt, anchor, 0.5, 6.0, "ciou", fp16_scores=True)
    ref = torch.sigmoid(logits[0, :, 2]).float().pow(0.5) * iou.pow(6.0)  # torch's half sigmoid
    assert torch.equal(got, ref)
    _, plain = alignment(logits, boxes, labels, gt, anchor, 0.5, 6.0, "ciou")
    assert not torch.equal(plain, got)


@pytest.mark.parametrize("confident", [False, True])
def test_fp16_loss_equals_the_official_autocast_flow_and_the_float32_loss_does_not(confident):
    maps = _maps16(confident=confident)
    got = DetectionLoss(NC, assigner_rule="official", fp16=True).branch_loss(maps, LABELS)
    got.sum().backward()
    grads = [m.grad.clone() for m in maps]
    for m in maps:
        m.grad = None
    ref = _official_fp16_flow(maps, LABELS)
    ref.sum().backward()
    tol = 2e-6 * ref.abs()
    assert ((got - ref).abs() <= tol).all(), (got, ref)
    for g, m in zip(grads, maps):
        assert g.dtype == torch.float16
        torch.testing.assert_close(g.float(), m.grad.float(), rtol=1e-3, atol=2e-6)
    # the float32 loss of the same maps is farther from this flow than the tolerance, in the box term at least
    plain = DetectionLoss(NC, assigner_rule="official").branch_loss([m.detach() for m in maps], LABELS)
    assert (plain - ref.detach()).abs()[0] > 20 * tol[0]
    if confident:  # the BCE targets' rounding alone moves the class term by more than the tolerance
        unrounded = _official_fp16_flow([m.detach() for m in maps], LABELS, round_targets=False)
        assert (unrounded[1] - got[1].detach()).abs() > 5 * tol[1]


@pytest.mark.parametrize("requested", [True, False])
def test_the_run_log_names_the_loss_path_and_a_cpu_run_stays_float32(tmp_path, requested):
    """``loss_fp16`` asked for on a CPU (no fp16 autocast there): the log says it is off and why, the loss stays
    float32; not asked for: the log says nothing about it (the recipes' values: tests/train/test_recipes.py)."""
    from rich.console import Console

    out = io.StringIO()
    cfg = tiny_config(coco_pair(tmp_path), tmp_path, val=False, epochs=1, hyp={"loss_fp16": requested})
    trainer = Trainer(cfg, reporter=Reporter(True, Console(file=out, width=300, highlight=False)))
    trainer.setup()
    assert trainer.loss_fn.fp16 is False and trainer.loss_fn.assigner.fp16_scores is False
    said = "loss_fp16: off here (it needs fp16 autocast); the loss stays float32" in out.getvalue()
    assert said is requested and ("loss_fp16" in out.getvalue()) is requested
