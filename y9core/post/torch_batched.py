"""The batched decode + NMS on torch tensors (any device; torch imported lazily): the one torch implementation.

A whole batch at once, with one download of the candidate counts and one of the rows:

1. candidates of every image (best class > conf), and ONE download: the per-image candidate counts;
2. a batched stable sort of the scores, boxes gathered up to the largest count;
3. images grouped into buckets of similar count ``k`` (the next power of two, at least ``MIN_BUCKET``), each
   bucket run at its own largest ``k``: one frame with thousands of candidates does not inflate the
   ``[b, k, k]`` IoU matrices of the others;
4. per bucket, the IoU > threshold matrix of the sorted boxes (``box_iou_torch``: the pairwise form of
   ``y9core.box_iou_torch``, the one torch IoU, re-exported under this name; computed once) and the
   greedy NMS, either
   - ``scan="triton"``: the matrix packed into bit words and the greedy scan walked box by box in one Triton
     kernel launch per bucket (``post.triton_nms``): its cost does not grow with suppression chains, and it
     needs no sync (buckets above ``triton_nms.MAX_K`` take the fixed point); or
   - ``scan="fixed-point"``: the fixed point of ``keep[j] = alive[j] and not any(keep[i] and iou[i, j] > t,
     i < j)`` (one sync every ``CHECK_EVERY`` passes; the passes grow with the chains of dense boxes);
   buckets whose ``[b, k, k]`` matrices would not fit ``budget`` elements go in groups, and an image whose
   own ``k * k`` exceeds ``budget`` goes to the host implementation (``post.nms.decode_nms``: work beyond
   the limits, as ``post.choice`` says);
5. ONE download of the rows of every bucket (boxes, score, class, keep flag).

It computes the same float32 operations in the same order as ``post.nms.decode_nms`` (candidates, stable
descending order, class offsets, IoU formula, threshold), so the detections are identical (tests compare
them bit for bit on CPU tensors; the Triton kernel through Triton's interpreter). The scan is the caller's
(``post.rows``: the implementation ``post.choice.choose_post`` picked); with ``fallback`` a Triton kernel that
fails is recorded by ``post.choice.record_failure`` and the fixed point finishes the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from y9core.box_iou_torch import box_iou_matrix_torch as box_iou_torch
from y9core.boxes import MAX_WH, threshold_below
from y9core.post.choice import PostImpl, record_failure
from y9core.post.nms import MAX_NMS, check_classes, check_thresholds, decode_nms

BUDGET = 1 << 27  # elements of one [b, K, K] IoU group (float32: 512 MB)
CHECK_EVERY = 4  # fixed-point passes of the greedy NMS between convergence checks
MIN_BUCKET = 32  # smallest bucket of candidate counts
SCANS = ("triton", "fixed-point")


@dataclass
class Candidates:
    """The candidates of every image of a batch, sorted (``select_candidates``).

    Attributes:
        best (Tensor[B, A] float32): the best class score of every anchor.
        cls (Tensor[B, A] int64): its class (the first on ties).
        counts (Tensor[B] int32): candidates per image (<= max_nms).
        order (Tensor[B, A] int64): anchors, candidates first, by descending score, ties in anchor order.
    """

    best: Any
    cls: Any
    counts: Any
    order: Any


def _check_scan(scan: str, pred: Any) -> str:
    """``scan`` checked against pred's device: "triton" or "fixed-point"."""
    if scan not in SCANS:
        raise ValueError(f"scan={scan!r}; expected one of {', '.join(SCANS)}.")
    if scan == "triton":
        try:
            from y9core.post import triton_nms
        except ImportError as exc:
            from y9core.errors import BackendUnavailableError

            raise BackendUnavailableError(f"scan='triton' needs the triton package ({exc}).") from exc
        if not (pred.is_cuda or triton_nms.interpreting()):
            raise ValueError(
                f"scan='triton' got tensors on {pred.device}; expected CUDA tensors (or TRITON_INTERPRET=1)."
            )
    return scan


def bucket_images(counts: list[int], min_k: int = MIN_BUCKET) -> list[tuple[int, list[int]]]:
    """Group images by candidate count.

    Args:
        counts: candidates per image (B ints).
        min_k: smallest bucket.
    Returns:
        ``[(k, image indices)]`` by ascending bucket: images whose count has the same next power of two (at
        least ``min_k``); ``k`` is the largest count in the bucket. Images without candidates are left out.
    """
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(counts):
        if n > 0:
            groups.setdefault(max(int(min_k), 1 << (int(n) - 1).bit_length()), []).append(i)
    return [(max(counts[i] for i in idx), idx) for _, idx in sorted(groups.items())]


def batched_postprocess_torch(
    pred: Any,
    *,
    conf: Any = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    max_det: int = 300,
    classes: Any = None,
    max_nms: int = MAX_NMS,
    budget: int = BUDGET,
    scan: str = "fixed-point",
    min_bucket: int = MIN_BUCKET,
    fallback: bool = False,
) -> list[np.ndarray]:
    """pred (Tensor[B, 4+nc, A], any device) -> list of B ndarray[N, 6] float32 rows (x1, y1, x2, y2, score,
    class) in input pixels by descending score: the result of ``post.nms.decode_nms``.

    ``scan``: "triton" (CUDA tensors, or any tensors with ``TRITON_INTERPRET=1``) or "fixed-point"; see the
    module docstring. ``fallback``: a Triton kernel that fails is recorded and the fixed point used (the
    implementation was chosen automatically) instead of raising.
    ``min_bucket``: the smallest bucket; one at least the next power of two of every count (``1 << 15`` with
    the default ``max_nms``) puts all images in one bucket at the largest k (the behaviour before buckets)."""
    import torch

    if not isinstance(pred, torch.Tensor):
        raise TypeError(f"pred is a {type(pred).__name__}; expected a torch.Tensor [B, 4+nc, A].")
    if pred.ndim != 3 or pred.shape[1] < 5:
        raise ValueError(
            f"pred has shape {tuple(pred.shape)}; expected [B, 4+nc, A] with at least one class."
        )
    if int(max_det) < 1:
        raise ValueError(f"max_det is {max_det!r}; expected a positive number of detections.")
    scan = _check_scan(scan, pred)
    pred = pred.float()
    b, c, _ = pred.shape
    nc, dev = c - 4, pred.device
    thr, allowed = class_thresholds(conf, iou, classes, nc)
    sel = select_candidates(
        pred, torch.from_numpy(thr).to(dev), torch.from_numpy(allowed).to(dev), int(max_nms)
    )
    counts_t = sel.counts
    counts = counts_t.tolist()  # the one sync before the NMS
    out = [np.zeros((0, 6), np.float32) for _ in range(b)]
    kmax = max(counts, default=0)
    if kmax == 0:
        return out
    boxes, scores, clsf = sorted_boxes(pred, sel, kmax)
    t = float(threshold_below(iou))
    parts: list[tuple[list[int], Any]] = []
    for k, members in bucket_images(counts, min_bucket):
        if k * k > budget:  # one image alone would not fit: the host implementation (the fallback rule)
            host = pred[members].cpu().numpy()
            kw = dict(agnostic=agnostic, max_det=max_det, classes=classes, max_nms=max_nms)
            for i, rows in zip(members, decode_nms(host, conf=conf, iou=iou, **kw)):
                out[i] = rows
            continue
        idx = torch.as_tensor(members, device=dev)
        bx, n = boxes[idx, :k], counts_t[idx]
        keep = _bucket_keep(bx, clsf[idx, :k], n, agnostic=agnostic, t=t, max_det=int(max_det),
                            budget=budget, scan=scan, fallback=fallback)  # fmt: skip
        parts.append(
            (members, torch.cat([bx, scores[idx, :k, None], clsf[idx, :k, None], keep[..., None]], 2))
        )
    if parts:
        flat = torch.cat([p.reshape(-1) for _, p in parts]).cpu().numpy()  # the one download of the rows
        pos = 0
        for members, p in parts:
            blk = flat[pos : pos + p.numel()].reshape(p.shape)
            pos += p.numel()
            for j, i in enumerate(members):
                out[i] = np.ascontiguousarray(blk[j][blk[j, :, 6] > 0, :6])
    return out


def class_thresholds(conf: Any, iou: float, classes: Any, nc: int) -> tuple[np.ndarray, np.ndarray]:
    """Checked options -> (ndarray[nc] float32 confidence threshold per class, ndarray[nc] bool class filter),
    the inputs of ``select_candidates``."""
    thr = check_thresholds(conf, iou, nc)
    ids = check_classes(classes, nc)
    allowed = np.ones(nc, bool)
    if ids is not None:
        allowed[:] = False
        allowed[ids] = True
    return np.array(np.broadcast_to(thr, (nc,)), np.float32), allowed


def select_candidates(pred: Any, thr: Any, allowed: Any, max_nms: int) -> Candidates:
    """The candidates of every image, sorted.

    Args:
        pred (Tensor[B, 4+nc, A]): raw output (float16 or float32: the max is taken in its dtype, float16 ->
            float32 being exact and monotonic).
        thr (Tensor[nc] float32): confidence threshold per class (strictly greater passes).
        allowed (Tensor[nc] bool): the class filter.
        max_nms: most candidates per image.
    Returns:
        the ``Candidates``.
    """
    import torch

    best, cls = pred[:, 4:].max(1)
    best = best.float()
    valid = (best > thr[cls]) & allowed[cls]
    counts = valid.sum(1, dtype=torch.int32).clamp_(max=max_nms)
    key = torch.where(valid, best, torch.full_like(best, -float("inf")))
    order = torch.sort(key, dim=1, descending=True, stable=True).indices
    return Candidates(best, cls, counts, order)


def sorted_boxes(pred: Any, sel: Candidates, k: int) -> tuple[Any, Any, Any]:
    """The first ``k`` candidates of ``select_candidates``: boxes Tensor[B, K, 4] xyxy float32 (``x - w / 2``
    ... as ``post.host.decode``), scores Tensor[B, K] float32, classes Tensor[B, K] float32."""
    import torch

    b = pred.shape[0]
    idx = sel.order[:, :k]
    scores = sel.best.gather(1, idx)
    clsf = sel.cls.gather(1, idx).float()
    xywh = pred[:, :4].gather(2, idx[:, None, :].expand(b, 4, k)).float()  # [B, 4, K]
    half_w, half_h = xywh[:, 2] / 2, xywh[:, 3] / 2
    boxes = torch.stack(
        [xywh[:, 0] - half_w, xywh[:, 1] - half_h, xywh[:, 0] + half_w, xywh[:, 1] + half_h], 2
    )
    return boxes, scores, clsf


def class_offsets_torch(boxes: Any, alive: Any) -> Any:
    """``boxes.class_offsets``'s offset per image: boxes Tensor[B, K, 4], alive Tensor[B, K] bool (the real
    candidates) -> Tensor[B] float32, MAX_WH unless the candidates span more (then ceil(span + 1))."""
    import torch

    hi = boxes.masked_fill(~alive[..., None], -float("inf")).amax((1, 2)).double()
    lo = boxes.masked_fill(~alive[..., None], float("inf")).amin((1, 2)).double().clamp(max=0.0)
    span = hi - lo
    return torch.where(span >= MAX_WH, torch.ceil(span + 1), torch.full_like(span, MAX_WH)).float()


def _bucket_keep(
    boxes: Any,
    clsf: Any,
    n: Any,
    *,
    agnostic: bool,
    t: float,
    max_det: int,
    budget: int,
    scan: str,
    fallback: bool = False,
) -> Any:
    """One bucket: boxes Tensor[b, K, 4] sorted by score, clsf Tensor[b, K] classes (float), n Tensor[b]
    candidates per image (positions >= n are padding) -> keep Tensor[b, K] float (1.0 kept, 0.0 not)."""
    import torch

    b, k = boxes.shape[:2]
    alive = torch.arange(k, device=boxes.device)[None, :] < n[:, None]  # [b, K]
    shifted = boxes if agnostic else boxes + (clsf * class_offsets_torch(boxes, alive)[:, None])[..., None]
    group = max(1, budget // (k * k))
    upper = None
    keep_all = []
    for s in range(0, b, group):
        part = shifted[s : s + group]
        over = box_iou_torch(part, part) > t
        keep = _triton_keep(over, n[s : s + group], max_det, fallback) if scan == "triton" else None
        if keep is None:
            if upper is None:
                upper = torch.ones((k, k), dtype=torch.bool, device=boxes.device).triu_(1)
            keep = _fixed_point(over.logical_and_(upper), alive[s : s + group])
        keep_all.append(keep)
    keep = torch.cat(keep_all)
    keep &= keep.cumsum(1) <= max_det
    return keep.float()


def _triton_keep(over: Any, n: Any, max_det: int, fallback: bool) -> Any:
    """The Triton scan of one group (Tensor[b, K] bool), or None when K is above its limit or, with
    ``fallback``, the kernel fails here (recorded once: ``choose_post`` skips it from then on)."""
    from y9core.post import triton_nms

    if over.shape[1] > triton_nms.MAX_K:
        return None
    try:
        return triton_nms.greedy_keep(over, n, max_det)
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot build here must not stop the Detector
        if not fallback:
            raise
        record_failure(PostImpl.TORCH_TRITON, exc)
        return None


def _fixed_point(over: Any, alive: Any) -> Any:
    """Greedy NMS as a fixed point: over Tensor[b, K, K] bool (upper triangle), alive Tensor[b, K] bool ->
    keep Tensor[b, K] bool."""
    import torch

    keep = alive.clone()
    # The convergence test (a device sync) only every CHECK_EVERY passes: extra passes at the fixed point
    # change nothing and cost far less than a sync each.
    for _ in range(0, over.shape[1] + CHECK_EVERY, CHECK_EVERY):
        prev = keep
        for _ in range(CHECK_EVERY):
            keep = alive & ~(over & keep[:, :, None]).any(1)
        if torch.equal(prev, keep):
            break
    return keep
