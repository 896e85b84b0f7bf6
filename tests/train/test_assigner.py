"""TaskAlignedAssigner against a slow per-image, per-box reference written from the rule (float64), for both
rules: "y9" (threshold align > 1e-9, only boxes that kept an anchor compete for it) and "official" (the official
YOLOv9 TaskAlignedAssigner: no threshold, a conflicting anchor goes to the box of highest CIoU among all boxes of
its image)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from y9train.loss import AnchorGrid, TaskAlignedAssigner

STRIDES = (8.0, 16.0, 32.0)


def _grid(imgsz: int) -> AnchorGrid:
    feats = [torch.zeros(1, 1, imgsz // int(s), imgsz // int(s)) for s in STRIDES]
    return AnchorGrid.from_feats(feats, STRIDES)


def _problem(seed: int, batch: int = 3, imgsz: int = 128, nc: int = 4, boxes: tuple[int, int] = (4, 10),
             spread: float = 6.0):  # fmt: skip
    """Random but demanding inputs: clustered, overlapping boxes (conflicts), edges exactly on anchor
    centres, tiny boxes with no anchor inside, an image without boxes, labels not sorted by image.
    ``boxes``: range of the box count per image; ``spread``: std of box centres around 3 cluster centres (px)."""
    g = torch.Generator().manual_seed(seed)
    grid = _grid(imgsz)
    a = grid.num_anchors
    rows = []
    for b in range(batch - 1):  # the last image has no boxes
        centres = torch.rand(3, 2, generator=g) * imgsz
        for k in range(int(torch.randint(*boxes, (1,), generator=g))):
            c = centres[k % 3] + torch.randn(2, generator=g) * spread
            wh = torch.exp(torch.empty(2).uniform_(math.log(3), math.log(90), generator=g))
            x1y1, x2y2 = (c - wh / 2).clamp(0, imgsz), (c + wh / 2).clamp(0, imgsz)
            if k % 4 == 0:  # snap to multiples of 4 px: edges on anchor centres of every stride
                x1y1, x2y2 = (x1y1 / 4).round() * 4, (x2y2 / 4).round() * 4
            rows.append([b, float(torch.randint(nc, (1,), generator=g)), *x1y1.tolist(), *x2y2.tolist()])
    labels = torch.tensor(rows, dtype=torch.float32)
    labels = labels[torch.randperm(len(labels), generator=g)]
    # predicted boxes around each anchor, sizes 4..100 px; class logits around -2
    ctr = grid.pixel_points()[None].expand(batch, a, 2) + torch.randn(batch, a, 2, generator=g) * 4
    wh = torch.exp(torch.empty(batch, a, 2).uniform_(math.log(4), math.log(100), generator=g))
    pred_boxes = torch.cat([ctr - wh / 2, ctr + wh / 2], -1)
    cls_logits = torch.randn(batch, a, nc, generator=g) - 2
    return cls_logits, pred_boxes, grid, labels


def _reference(cls_logits, pred_boxes, grid, labels, topk=10, alpha=0.5, beta=6.0, eps=1e-9, overlap="iou",
               rule="y9", stats=None):  # fmt: skip
    """The rule, literally: per image, per box, per anchor, in float64. Returns dense (fg, gt, score).

    rule "y9": a box keeps its ``topk`` candidates (anchor centre strictly inside) of highest align with
    align > eps; an anchor kept by several boxes goes to the one among them of highest overlap (ties: lowest row).
    rule "official": the same top-k with no threshold (only align == 0 is never kept); an anchor kept by several
    boxes goes to the box of highest overlap with its prediction among ALL boxes of the image (ties: lowest row),
    with that pair's overlap and align. ``stats`` (a dict) receives the number of anchors so adopted by a box that
    had not kept them."""
    batch, n_anchors, _ = cls_logits.shape
    pts = grid.pixel_points().double().numpy()
    logits, boxes, lab = cls_logits.double().numpy(), pred_boxes.double().numpy(), labels.double().numpy()
    fg = np.zeros((batch, n_anchors), bool)
    gt_idx = np.full((batch, n_anchors), -1)
    score = np.zeros((batch, n_anchors))

    def iou(p, q):
        iw = max(min(p[2], q[2]) - max(p[0], q[0]), 0.0)
        ih = max(min(p[3], q[3]) - max(p[1], q[1]), 0.0)
        inter = iw * ih
        if overlap == "iou":
            return inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter + 1e-7)
        e = 1e-7  # CIoU (Zheng et al. 2020), clamped at 0
        w1, h1, w2, h2 = p[2] - p[0], p[3] - p[1] + e, q[2] - q[0], q[3] - q[1] + e
        o = inter / (w1 * h1 + w2 * h2 - inter + e)
        c2 = (max(p[2], q[2]) - min(p[0], q[0])) ** 2 + (max(p[3], q[3]) - min(p[1], q[1])) ** 2 + e
        rho2 = ((p[0] + p[2] - q[0] - q[2]) ** 2 + (p[1] + p[3] - q[1] - q[3]) ** 2) / 4
        v = 4 / math.pi**2 * (math.atan(w2 / h2) - math.atan(w1 / h1)) ** 2
        return max(o - rho2 / c2 - v * v / (v - o + 1 + e), 0.0)

    def pair(b, a, g):
        o = iou(boxes[b, a], lab[g, 2:6])
        s = 1.0 / (1.0 + math.exp(-logits[b, a, int(lab[g, 1])]))
        return o, s**alpha * o**beta

    adopted = 0
    for b in range(batch):
        chosen: dict[int, list[tuple[int, float, float]]] = {}  # anchor -> [(box, iou, align)]
        in_image = [i for i in range(len(lab)) if int(lab[i, 0]) == b]
        for g in in_image:
            c, box = int(lab[g, 1]), lab[g, 2:6]
            cands = []
            for a in range(n_anchors):
                x, y = pts[a]
                if box[0] < x < box[2] and box[1] < y < box[3]:
                    o = iou(boxes[b, a], box)
                    s = 1.0 / (1.0 + math.exp(-logits[b, a, c]))
                    cands.append((s**alpha * o**beta, a, o))
            cands.sort(key=lambda e: (-e[0], e[1]))
            for align, a, o in cands[:topk]:
                if align > (eps if rule == "y9" else 0.0):
                    chosen.setdefault(a, []).append((g, o, align))
        if rule == "official":  # conflicting anchors: every box of the image competes
            for a, lst in chosen.items():
                if len(lst) > 1:
                    chosen[a] = [(g, *pair(b, a, g)) for g in in_image]
                    winner = max(chosen[a], key=lambda e: (e[1], -e[0]))[0]
                    adopted += winner not in [e[0] for e in lst]
        final = {a: max(lst, key=lambda e: (e[1], -e[0])) for a, lst in chosen.items()}
        for g in {e[0] for e in final.values()}:
            mine = [(a, o, al) for a, (gg, o, al) in final.items() if gg == g]
            max_iou, max_align = max(e[1] for e in mine), max(e[2] for e in mine)
            for a, _o, al in mine:
                fg[b, a], gt_idx[b, a], score[b, a] = True, g, al * max_iou / (max_align + eps)
    if stats is not None:
        stats["adopted"] = adopted
    return fg, gt_idx, score


@pytest.mark.parametrize(
    "seed,topk,overlap", [(0, 10, "iou"), (1, 10, "iou"), (2, 3, "iou"), (3, 1, "iou"), (5, 10, "ciou")]
)
def test_assigner_equals_reference(seed, topk, overlap):
    cls_logits, pred_boxes, grid, labels = _problem(seed)
    asg = TaskAlignedAssigner(topk=topk, overlap=overlap)(cls_logits, pred_boxes, grid, labels)
    fg, gt, score = asg.dense(cls_logits.shape[0], grid.num_anchors)
    ref_fg, ref_gt, ref_score = _reference(cls_logits, pred_boxes, grid, labels, topk=topk, overlap=overlap)
    assert len(set(ref_gt[ref_fg].tolist())) > 4 and ref_fg.sum() > min(4 * topk, 20)  # not trivial
    assert np.array_equal(fg.numpy(), ref_fg)
    assert np.array_equal(gt.numpy(), ref_gt)
    np.testing.assert_allclose(score.numpy(), ref_score, rtol=1e-5, atol=1e-8)
    # each box keeps at most topk anchors; target scores lie in [0, 1]
    assert torch.bincount(asg.gt_idx, minlength=len(labels)).max() <= topk
    assert float(asg.score.min()) >= 0 and float(asg.score.max()) <= 1
    if overlap == "ciou":  # the option matters: plain IoU gives other target scores on the same input
        other = TaskAlignedAssigner(topk=topk)(cls_logits, pred_boxes, grid, labels)
        assert not torch.equal(other.dense(cls_logits.shape[0], grid.num_anchors)[2], score)


def test_conflicts_and_boundaries_are_exercised():
    """The reference inputs do contain anchors claimed by several boxes and box edges on anchor centres."""
    cls_logits, pred_boxes, grid, labels = _problem(0)
    pts = grid.pixel_points()
    on_edge = ((pts[:, None, 0] == labels[None, :, 2]) | (pts[:, None, 0] == labels[None, :, 4])).any()
    assert bool(on_edge)
    claims = TaskAlignedAssigner(topk=10)
    # with conflict resolution disabled by hand, some anchor would be claimed twice
    from y9train.loss.assigner import alignment, select_topk

    # every (box, anchor) pair with the anchor centre strictly inside the box, box-major (dense)
    x1, y1, x2, y2 = (labels[:, None, k] for k in range(2, 6))
    inside = (pts[None, :, 0] > x1) & (pts[None, :, 0] < x2) & (pts[None, :, 1] > y1) & (pts[None, :, 1] < y2)
    gt, anchor = inside.nonzero(as_tuple=True)
    _, align = alignment(cls_logits, pred_boxes, labels, gt, anchor, claims.alpha, claims.beta)
    sel = select_topk(gt, align, len(labels), 10, 1e-9)
    keys = labels[gt[sel], 0].long() * grid.num_anchors + anchor[sel]
    assert len(keys) > len(torch.unique(keys))


def test_chunked_pairs_give_the_same_assignment():
    cls_logits, pred_boxes, grid, labels = _problem(4)
    full = TaskAlignedAssigner()(cls_logits, pred_boxes, grid, labels)
    chunked = TaskAlignedAssigner(max_pairs=40)(cls_logits, pred_boxes, grid, labels)
    b, a = cls_logits.shape[0], grid.num_anchors
    for x, y in zip(full.dense(b, a), chunked.dense(b, a), strict=True):
        assert torch.equal(x, y)


def test_no_boxes_gives_no_positives():
    cls_logits, pred_boxes, grid, _ = _problem(0)
    asg = TaskAlignedAssigner()(cls_logits, pred_boxes, grid, torch.zeros(0, 6))
    assert len(asg) == 0 and asg.score.numel() == 0


# crowded: 12-30 boxes per image in 3 tight clusters (many anchors claimed by several boxes), 1.5-90 px boxes
CROWDED = {"boxes": (12, 30), "spread": 4.0}


@pytest.mark.parametrize(
    ("seed", "topk", "crowded"), [(0, 10, False), (1, 10, True), (2, 10, True), (3, 4, True)]
)
def test_official_rule_equals_reference(seed, topk, crowded):
    """Masks, assigned boxes and target scores of rule "official" equal the slow reference (CIoU overlap)."""
    cls_logits, pred_boxes, grid, labels = _problem(seed, batch=4, **(CROWDED if crowded else {}))
    asg = TaskAlignedAssigner(topk=topk, overlap="ciou", rule="official")(
        cls_logits, pred_boxes, grid, labels
    )
    fg, gt, score = asg.dense(cls_logits.shape[0], grid.num_anchors)
    stats = {}
    ref_fg, ref_gt, ref_score = _reference(cls_logits, pred_boxes, grid, labels, topk=topk, overlap="ciou",
                                           rule="official", stats=stats)  # fmt: skip
    assert ref_fg.sum() > 4 * topk and len(set(ref_gt[ref_fg].tolist())) > 8  # not trivial
    assert np.array_equal(fg.numpy(), ref_fg)
    assert np.array_equal(gt.numpy(), ref_gt)  # the assigned box, hence the target box and class
    np.testing.assert_allclose(score.numpy(), ref_score, rtol=1e-5, atol=1e-8)
    if (
        crowded
    ):  # the conflict rule that differs from y9's is exercised: a box adopted an anchor it had not kept
        assert stats["adopted"] > 0


def test_official_rule_keeps_candidates_below_the_y9_threshold():
    """Where a model's overlaps are small (early training), align = score^0.5 * CIoU^6 < 1e-9 for every pair. Rule
    y9 then has no positive at all; rule official keeps the top-k of every box that has candidates of non-zero
    CIoU, with target scores align * max_CIoU / (max_align + 1e-9) (small, non-zero), as the reference does."""
    cls_logits, pred_boxes, grid, labels = _problem(7)
    centre = (pred_boxes[..., :2] + pred_boxes[..., 2:]) / 2  # 600 px predictions: CIoU 0.02 at most
    pred_boxes = torch.cat([centre - 300, centre + 300], -1)
    y9 = TaskAlignedAssigner(overlap="ciou")(cls_logits, pred_boxes, grid, labels)
    off = TaskAlignedAssigner(overlap="ciou", rule="official")(cls_logits, pred_boxes, grid, labels)
    assert len(y9) == 0 and len(off) >= 20 and len(set(off.gt_idx.tolist())) >= 3
    fg, gt, score = off.dense(cls_logits.shape[0], grid.num_anchors)
    ref = _reference(cls_logits, pred_boxes, grid, labels, overlap="ciou", rule="official")
    assert np.array_equal(fg.numpy(), ref[0]) and np.array_equal(gt.numpy(), ref[1])
    np.testing.assert_allclose(score.numpy(), ref[2], rtol=1e-5, atol=1e-30)
    assert float(off.score.min()) > 0


def test_official_rule_needs_ciou_and_names_the_choices():
    with pytest.raises(ValueError, match="rule 'official' uses CIoU"):
        TaskAlignedAssigner(rule="official")
    with pytest.raises(ValueError, match="expected one of y9, official"):
        TaskAlignedAssigner(rule="tood")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_host_pair_counts_equal_the_device_ranges(seed):
    """The candidate count per box, counted on the host in numpy (what sizes the assigner's tensors without a read
    from the device), equals the count of the anchors strictly inside each box, and ``anchor_ranges``' count."""
    from y9train.loss.pairs import anchor_ranges, pair_chunks, pair_counts

    _, _, grid, labels = _problem(seed)
    boxes = torch.cat([labels[:, 2:6], torch.tensor([[3.9, 4.1, 4.1, 3.9], [-50.0, -50.0, 500.0, 500.0]])])
    pts = grid.pixel_points()
    x1, y1, x2, y2 = (boxes[:, None, k] for k in range(4))
    inside = ((pts[None, :, 0] > x1) & (pts[None, :, 0] < x2) & (pts[None, :, 1] > y1) & (pts[None, :, 1] < y2))
    counts = pair_counts(boxes.numpy(), grid)
    r = anchor_ranges(boxes, grid)
    assert counts.tolist() == inside.sum(1).tolist() == (r[2] * r[3]).sum(1).tolist()
    assert counts[-2] == 0 and counts[-1] == grid.num_anchors  # no anchor inside; every anchor inside
    chunks = pair_chunks(counts, 40)
    assert [c[0] for c in chunks[1:]] == [c[1] for c in chunks[:-1]] and chunks[-1][1] == len(boxes)
    assert all(total == counts[a:b].sum() and (total <= 40 or b - a == 1) for a, b, total in chunks)


def test_true_positions_equal_nonzero_at_a_host_known_size():
    from y9train.loss.assigner import true_positions

    g = torch.Generator().manual_seed(0)
    for n, p in [(0, 0.5), (1, 1.0), (50, 0.0), (50, 1.0), (200, 0.1), (200, 0.7)]:
        mask = torch.rand(n, generator=g) < p
        for size in (0, int(mask.sum()), int(mask.sum()) + 7, max(int(mask.sum()) - 3, 0)):
            got = true_positions(mask, size)
            want = torch.nonzero_static(mask, size=size, fill_value=-1)[:, 0]
            assert torch.equal(got, want), (n, p, size)
            assert torch.equal(got[got >= 0], mask.nonzero()[:size, 0])
