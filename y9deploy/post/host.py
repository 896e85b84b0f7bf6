"""Post-processing on the host, the Detector's side: rows -> ``Detections`` in frame pixels, and the rows of an
end-to-end model (its NMS inside). The decode + NMS implementations are in ``y9core.post`` (shared with training's
validation), chosen by ``y9core.post.choice.choose_post``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from y9core.boxes import clip_scores  # the one clip of the runtime's scores
from y9core.letterbox import LetterboxInfo, scale_boxes
from y9deploy.detections import Detections, Names, checked_names


def to_detections(
    rows: np.ndarray, info: LetterboxInfo | None, names: Names = (), *, clip: bool = True
) -> Detections:
    """One ``postprocess`` output -> ``Detections`` in frame pixels.

    Args:
        rows (ndarray[N, 6]): (x1, y1, x2, y2, score, class) in network-input pixels.
        info: the frame's ``LetterboxInfo`` (from ``prepare``); None keeps input pixels.
        names: class names.
        clip: clip the boxes to the frame.
    The scores are clipped to [0, 1] (``y9core.boxes.clip_scores``).
    """
    rows = np.asarray(rows, np.float32)
    if rows.ndim != 2 or rows.shape[1] != 6:
        raise ValueError(
            f"rows has shape {rows.shape}; expected (N, 6) rows of x1, y1, x2, y2, score, class."
        )
    rows = scale_boxes(rows, info, clip=clip) if info is not None else rows.copy()
    clip_scores(rows[:, 4])
    return Detections.from_rows(rows, names)


def batch_to_detections(
    block: np.ndarray,
    kept: np.ndarray,
    infos: Sequence[LetterboxInfo],
    names: Names = (),
    *,
    clip: bool = True,
) -> list[Detections]:
    """A whole batch of post-processed rows -> one ``Detections`` per frame, with a handful of numpy operations
    for the batch instead of a dozen per frame (the GPU path at large batches; equal to ``to_detections`` of
    each frame's rows, bit for bit: the same float32 operations in the same order).

    Args:
        block (ndarray[B, M, 6] float32): rows (x1, y1, x2, y2, score, class) in input pixels; frame b's rows
            are ``block[b, :kept[b]]``.
        kept (ndarray[B] int): rows per frame.
        infos: the frames' ``LetterboxInfo`` (B of them).
        names: class names.
        clip: clip the boxes to each frame.
    Returns:
        list of B ``Detections`` (views into three new batch arrays: no per-frame copies).
    """
    block = np.asarray(block, np.float32)
    kept = np.asarray(kept, np.int64)
    b = len(infos)
    if block.ndim != 3 or block.shape[0] != b or block.shape[2] != 6 or kept.shape != (b,):
        raise ValueError(
            f"block has shape {block.shape} and kept {kept.shape} for {b} frames; expected [B, M, 6] and [B]."
        )
    if b and (kept.min() < 0 or kept.max() > block.shape[1]):
        raise ValueError(f"kept holds {kept.min()}..{kept.max()}; expected counts in [0, {block.shape[1]}].")
    names = checked_names(names)
    col = np.empty((b, 1, 1), np.float32)

    def per_frame(values: list[float]) -> np.ndarray:
        col[:, 0, 0] = values  # float64 -> float32 once, as the weak Python scalars of scale_boxes are
        return col.copy()

    left = per_frame([i.offset[0] for i in infos])
    top = per_frame([i.offset[1] for i in infos])
    sx = per_frame([i.in_hw[1] / i.resized_wh[0] for i in infos])
    sy = per_frame([i.in_hw[0] / i.resized_wh[1] for i in infos])
    xyxy = np.empty((b, block.shape[1], 4), np.float32)
    xyxy[..., 0::2] = (block[..., 0:4:2] - left) * sx
    xyxy[..., 1::2] = (block[..., 1:4:2] - top) * sy
    if clip:
        np.clip(xyxy[..., 0::2], 0, per_frame([i.in_hw[1] for i in infos]), out=xyxy[..., 0::2])
        np.clip(xyxy[..., 1::2], 0, per_frame([i.in_hw[0] for i in infos]), out=xyxy[..., 1::2])
    conf = clip_scores(np.array(block[..., 4], np.float32, order="C"))
    cls = block[..., 5].astype(np.int64)
    return [
        Detections.unchecked(xyxy[i, : kept[i]], conf[i, : kept[i]], cls[i, : kept[i]], names)
        for i in range(b)
    ]


def end2end_rows(outputs: dict[str, Any], n: int, opts: Any) -> list[np.ndarray]:
    """``num_dets`` [B, 1], ``boxes`` [B, M, 4] xyxy, ``scores`` [B, M], ``classes`` [B, M] (numpy) -> one
    ndarray[N, 6] float32 per image: rows (x1, y1, x2, y2, score, class) in input pixels, by descending score.

    Only the first ``num_dets`` slots of an image are read; then the host applies what the model's NMS
    inputs could not (a score strictly above ``conf``, the class filter, ``max_det``).
    """
    num = np.asarray(outputs["num_dets"]).reshape(len(outputs["num_dets"]), -1)[:n, 0]
    boxes = np.asarray(outputs["boxes"])[:n]
    scores = np.asarray(outputs["scores"])[:n]
    classes = np.asarray(outputs["classes"])[:n]
    conf = float(np.min(opts.conf))
    out = []
    for i in range(n):
        k = int(np.clip(num[i], 0, boxes.shape[1]))
        s = scores[i, :k].astype(np.float32)
        c = classes[i, :k].astype(np.int64)
        ok = s > conf
        if opts.classes is not None:
            ok &= np.isin(c, opts.classes)
        idx = np.flatnonzero(ok)
        idx = idx[np.argsort(-s[idx], kind="stable")][: opts.max_det]
        rows = np.empty((len(idx), 6), np.float32)
        rows[:, :4] = boxes[i, idx].astype(np.float32)
        rows[:, 4] = s[idx]
        rows[:, 5] = c[idx]
        out.append(rows)
    return out
