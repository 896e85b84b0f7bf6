"""Loss terms against direct formulas; DetectionLoss against a dense re-computation; smoothing, branches, grads."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from y9train.loss import DetectionLoss, box_iou, ciou, dfl_decode, dfl_loss
from y9train.loss.boxes import bbox2dist, dist2bbox
from y9train.loss.grid import AnchorGrid

NC, REG_MAX, STRIDES = 3, 16, (8.0, 16.0, 32.0)


def _random_boxes(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * 100
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * 60 + 0.5
    return torch.cat([xy, xy + wh], 1)


def _ciou_direct(p, q, eps=1e-7):
    """CIoU of two boxes from the paper's formula, plain Python floats."""
    w1, h1, w2, h2 = p[2] - p[0], p[3] - p[1] + eps, q[2] - q[0], q[3] - q[1] + eps
    inter = max(0.0, min(p[2], q[2]) - max(p[0], q[0])) * max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
    iou = inter / (w1 * h1 + w2 * h2 - inter + eps)
    c2 = (max(p[2], q[2]) - min(p[0], q[0])) ** 2 + (max(p[3], q[3]) - min(p[1], q[1])) ** 2 + eps
    rho2 = ((p[0] + p[2]) / 2 - (q[0] + q[2]) / 2) ** 2 + ((p[1] + p[3]) / 2 - (q[1] + q[3]) / 2) ** 2
    v = 4 / math.pi**2 * (math.atan(w2 / h2) - math.atan(w1 / h1)) ** 2
    alpha = v / (1 - iou + v + eps)
    return iou - rho2 / c2 - alpha * v


def _iou_direct(p, q, eps=1e-7):
    inter = max(0.0, min(p[2], q[2]) - max(p[0], q[0])) * max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
    return inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter + eps)


def test_ciou_and_iou_equal_the_direct_formula():
    a, b = _random_boxes(300, 0), _random_boxes(300, 1)
    b[:20] = a[:20]  # identical boxes
    b[20:40] = a[20:40] + 200  # disjoint boxes
    got_c, got_i = ciou(a, b), box_iou(a, b)
    for k in range(len(a)):
        p, q = a[k].tolist(), b[k].tolist()
        assert got_c[k].item() == pytest.approx(_ciou_direct(p, q), abs=1e-12)
        assert got_i[k].item() == pytest.approx(_iou_direct(p, q), abs=1e-12)
    assert torch.allclose(got_c[:20], torch.ones(20, dtype=torch.float64), atol=1e-6)
    assert (got_c[20:40] < 0).all() and (got_i[20:40] == 0).all()


def test_ciou_alpha_carries_no_gradient():
    a = _random_boxes(50, 2).requires_grad_()
    b = _random_boxes(50, 3)
    ciou(a, b).sum().backward()
    # reference gradient: the same formula with alpha computed from detached inputs
    a2 = a.detach().clone().requires_grad_()
    w1, h1 = a2[:, 2] - a2[:, 0], a2[:, 3] - a2[:, 1] + 1e-7
    w2, h2 = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1] + 1e-7
    iou = box_iou(a2, b)
    v = 4 / math.pi**2 * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
    alpha = (v / (1 - iou + v + 1e-7)).detach()
    cw = torch.maximum(a2[:, 2], b[:, 2]) - torch.minimum(a2[:, 0], b[:, 0])
    ch = torch.maximum(a2[:, 3], b[:, 3]) - torch.minimum(a2[:, 1], b[:, 1])
    rho2 = ((a2[:, :2] + a2[:, 2:]) / 2 - (b[:, :2] + b[:, 2:]) / 2).pow(2).sum(1)
    (iou - rho2 / (cw**2 + ch**2 + 1e-7) - alpha * v).sum().backward()
    assert torch.allclose(a.grad, a2.grad, atol=1e-9)


def test_dfl_equals_explicit_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(40, 4, REG_MAX, generator=g, dtype=torch.float64)
    target = torch.rand(40, 4, generator=g, dtype=torch.float64) * (REG_MAX - 1.01)
    target[0, 0], target[0, 1] = 0.0, REG_MAX - 1.01  # both ends
    got = dfl_loss(logits, target)
    for i in range(40):
        for s in range(4):
            z = logits[i, s].tolist()
            lse = math.log(sum(math.exp(v) for v in z))
            t = target[i, s].item()
            lo = int(math.floor(t))
            ref = (lse - z[lo]) * (lo + 1 - t) + (lse - z[lo + 1]) * (t - lo)
            assert got[i, s].item() == pytest.approx(ref, abs=1e-12)
    expect = (logits.softmax(-1) * torch.arange(REG_MAX, dtype=torch.float64)).sum(-1)
    assert torch.allclose(dfl_decode(logits), expect)


def test_dfl_targets_are_clamped_below_the_last_bin():
    """Distances (grid units) from anchors to boxes clamp to [0, reg_max - 1 - 0.01] = [0, 14.99]."""
    pts = torch.tensor([[2.5, 2.5], [10.5, 3.5]])
    boxes = torch.tensor([[0.0, 1.0, 40.0, 3.0], [12.0, 0.0, 13.0, 30.0]])
    d = bbox2dist(pts, boxes, REG_MAX)
    expect = torch.tensor([[2.5, 1.5, 14.99, 0.5], [0.0, 3.5, 2.5, 14.99]])
    assert torch.allclose(d, expect)


# ----------------------------------------------------------------------------------------------------- full loss
def _maps(batch=2, imgsz=128, seed=0, requires_grad=True):
    g = torch.Generator().manual_seed(seed)
    maps = [
        torch.randn(batch, 4 * REG_MAX + NC, imgsz // int(s), imgsz // int(s), generator=g) for s in STRIDES
    ]
    return [m.requires_grad_(requires_grad) for m in maps]


LABELS = torch.tensor(
    [[0, 1, 10, 12, 60, 70], [0, 0, 40, 30, 120, 100], [0, 2, 44, 36, 110, 96], [1, 1, 5, 5, 25, 30],
     [1, 0, 64, 64, 127, 127], [1, 2, 80, 10, 90, 30]], dtype=torch.float32)  # fmt: skip


def _dense_boxes(box_logits: torch.Tensor, grid: AnchorGrid) -> torch.Tensor:
    """``Tensor[B, A, 4]``: the box (x1, y1, x2, y2, pixels, float32) of every anchor from ``box_logits [B, 4R, A]``."""
    b, _, a = box_logits.shape
    dist = dfl_decode(box_logits.float().transpose(1, 2).reshape(b * a, 4, REG_MAX)).view(b, a, 4)
    return dist2bbox(dist, grid.points[None], xywh=False) * grid.strides[None, :, None]


def _dense_reference(maps, labels, eps_smooth):
    """The loss terms recomputed densely over [B, A] from the same assignment (no sparse tricks)."""
    loss = DetectionLoss(NC, label_smoothing=eps_smooth)
    grid = AnchorGrid.from_feats(maps, STRIDES)
    x = torch.cat([m.flatten(2) for m in maps], 2).detach().double()
    box_logits, cls_logits = x[:, : 4 * REG_MAX], x[:, 4 * REG_MAX :]
    # the assignment from every anchor's decoded box (the loss decodes only the candidates' anchors)
    asg = loss.assigner(cls_logits.float().transpose(1, 2), _dense_boxes(box_logits, grid), grid, labels)
    fg, gt, score = asg.dense(x.shape[0], grid.num_anchors)
    score = score.double()
    target = torch.zeros_like(cls_logits)  # [B, nc, A]
    b_idx, a_idx = fg.nonzero(as_tuple=True)
    target[b_idx, labels[gt[fg], 1].long(), a_idx] = score[fg]
    norm = max(score.sum().item(), 1.0)
    smoothed = target * (1 - eps_smooth) + eps_smooth / 2
    cls = F.binary_cross_entropy_with_logits(cls_logits, smoothed, reduction="sum") / norm
    dist = box_logits.view(x.shape[0], 4, REG_MAX, -1).softmax(2)  # [B, 4, R, A]
    ltrb = (dist * torch.arange(REG_MAX, dtype=torch.float64)[:, None]).sum(2)  # [B, 4, A]
    pts = grid.points.double().T[None]
    pred = torch.cat([pts - ltrb[:, :2], pts + ltrb[:, 2:]], 1).transpose(1, 2)[fg]  # grid units
    tgt = labels[gt[fg], 2:6].double() / grid.strides[a_idx, None].double()
    box = ((1 - ciou(pred, tgt)) * score[fg]).sum() / norm
    p = pts.transpose(1, 2)[0][a_idx]
    tdist = torch.cat([p - tgt[:, :2], tgt[:, 2:] - p], 1).clamp(0, REG_MAX - 1.01)
    logp = box_logits.view(x.shape[0], 4, REG_MAX, -1).permute(0, 3, 1, 2)[fg].log_softmax(-1)  # [P, 4, R]
    lo = tdist.floor().long()
    dfl = -(logp.gather(-1, lo[..., None])[..., 0] * (lo + 1 - tdist) + logp.gather(-1, lo[..., None] + 1)[..., 0]
            * (tdist - lo)).mean(-1)  # fmt: skip
    dfl = (dfl * score[fg]).sum() / norm
    return torch.stack([box, cls, dfl]), len(asg)


@pytest.mark.parametrize("eps_smooth", [0.0, 0.1])
def test_branch_loss_equals_dense_reference(eps_smooth):
    maps = _maps()
    got = DetectionLoss(NC, label_smoothing=eps_smooth).branch_loss(maps, LABELS)
    ref, n_pos = _dense_reference(maps, LABELS, eps_smooth)
    assert n_pos > 15
    torch.testing.assert_close(got.double(), ref, rtol=2e-5, atol=1e-5)


def test_label_smoothing_changes_targets_loss_and_gradients():
    maps = _maps(requires_grad=False)
    for m in maps:  # class logits near the usual prior (sigmoid ~ 0.01)
        m[:, 4 * REG_MAX :] -= 4.5
        m.requires_grad_()
    plain, smooth = DetectionLoss(NC), DetectionLoss(NC, label_smoothing=0.2)
    parts0, parts1 = plain.branch_loss(maps, LABELS), smooth.branch_loss(maps, LABELS)
    assert parts1[1].item() > 1.5 * parts0[1].item()  # cls changes visibly: negatives now aim at 0.1
    assert torch.allclose(parts0[[0, 2]], parts1[[0, 2]])  # box and dfl do not
    # d(BCE)/dx = sigmoid(x) - target: at a background cell the smoothed target is eps / 2 = 0.1
    (g0,) = torch.autograd.grad(parts0[1], maps[2])
    (g1,) = torch.autograd.grad(parts1[1], maps[2])
    cls0, cls1 = g0[:, 4 * REG_MAX :], g1[:, 4 * REG_MAX :]
    norm0 = plain.assigner(*_assigner_inputs(plain, maps)).score.sum().clamp(min=1)
    diff = (cls0 - cls1) * norm0  # = 0.1 wherever the target was 0 (background)
    assert torch.isclose(diff, torch.full_like(diff, 0.1), atol=1e-5).float().mean() > 0.9


def _assigner_inputs(loss, maps):
    grid = AnchorGrid.from_feats(maps, STRIDES)
    x = torch.cat([m.flatten(2) for m in maps], 2).detach()
    return x[:, 4 * REG_MAX :].transpose(1, 2), _dense_boxes(x[:, : 4 * REG_MAX], grid), grid, LABELS


def test_dual_branches_weight_aux_by_a_quarter_and_gains_apply():
    main, aux = _maps(seed=1), _maps(seed=2)
    loss = DetectionLoss(NC)
    total, parts = loss([main, aux], LABELS)
    _, p_main = loss([main], LABELS)
    _, p_aux = loss(aux, LABELS)  # a bare list of maps is one branch
    for k in ("box", "cls", "dfl"):
        assert parts[k].item() == pytest.approx(p_main[k].item() + 0.25 * p_aux[k].item(), rel=1e-6)
        assert not parts[k].requires_grad
    assert total.item() == pytest.approx(2 * sum(v.item() for v in parts.values()), rel=1e-6)  # batch 2
    raw = loss.branch_loss(main, LABELS)
    assert [p_main[k].item() for k in ("box", "cls", "dfl")] == pytest.approx(
        [7.5 * raw[0].item(), 0.5 * raw[1].item(), 1.5 * raw[2].item()], rel=1e-6
    )
    # each branch is assigned from its own predictions
    a_main = loss.assigner(*_assigner_inputs(loss, main))
    a_aux = loss.assigner(*_assigner_inputs(loss, aux))
    assert not torch.equal(a_main.dense(2, 336)[0], a_aux.dense(2, 336)[0])


def test_gradients_reach_every_used_channel():
    maps = _maps()
    total, _ = DetectionLoss(NC)(maps, LABELS)
    total.backward()
    grads = torch.cat([m.grad.flatten(2) for m in maps], 2)  # [B, C, A]
    assert torch.isfinite(grads).all()
    assert (grads[:, 4 * REG_MAX :] != 0).all()  # every class logit of every anchor
    pos = grads[:, : 4 * REG_MAX].abs().sum(1) > 0  # anchors whose box logits got a gradient
    assert pos.sum() > 15
    assert (grads[:, : 4 * REG_MAX].permute(0, 2, 1)[pos] != 0).all()  # all 64 box channels of those anchors


def test_no_labels_and_bad_labels():
    maps = _maps()
    total, parts = DetectionLoss(NC)(maps, torch.zeros(0, 6))
    total.backward()
    assert parts["box"] == 0 and parts["dfl"] == 0 and parts["cls"] > 0
    assert torch.isfinite(maps[0].grad).all()
    loss = DetectionLoss(NC)
    with pytest.raises(
        ValueError, match=r"labels row 1 is .*expected a batch index in \[0, 2\), a class in \[0, 3\)"
    ):
        loss(maps, torch.tensor([[0, 0, 1, 1, 9, 9], [0, 3, 1, 1, 9, 9]], dtype=torch.float32))
    with pytest.raises(ValueError, match=r"labels has shape \(2, 5\)"):
        loss(maps, torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"expected 3 maps \[B, 68, H, W\] \(4 \* reg_max 16 \+ nc 4\)"):
        DetectionLoss(NC + 1)(maps, LABELS)
    with pytest.raises(ValueError, match="label_smoothing is 1.0"):
        DetectionLoss(NC, label_smoothing=1.0)(maps, LABELS)


def test_low_precision_maps_give_the_float32_loss():
    """Under AMP the head emits float16/bfloat16 maps: the loss upcasts, so it equals the float32 loss of the
    same values, and gradients come back in the maps' dtype."""
    maps = [m.to(torch.bfloat16).requires_grad_() for m in _maps(requires_grad=False)]
    total, parts = DetectionLoss(NC)(maps, LABELS)
    ref_total, ref_parts = DetectionLoss(NC)([m.detach().float() for m in maps], LABELS)
    assert total.dtype == torch.float32
    assert total.item() == pytest.approx(ref_total.item(), rel=1e-5)
    total.backward()
    assert maps[0].grad.dtype == torch.bfloat16 and torch.isfinite(maps[0].grad.float()).all()
