"""Outputs of end-to-end models (NMS inside the network) -> the same rows ``postprocess`` returns."""

from __future__ import annotations

from typing import Any

import numpy as np

from y9deploy.runtime.options import PredictOptions


def end2end_rows(outputs: dict[str, Any], n: int, opts: PredictOptions) -> list[np.ndarray]:
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
