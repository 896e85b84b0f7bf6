"""Issue 53's round-2 held-out families (tuning since round 3; seeds 200-202). Pure numpy; base as ``mot_families``.

- ``fragments``: in runs (start ``start`` a frame, mean length ``run``) a person is seen as his top 45-65% and, with
  probability ``legs``, his bottom 35-55%, each at 0.6-0.95 of his score; his whole box with probability ``whole``
  (at 0.7-0.9).
- ``sizelag``: the box is a running mean of the true ones (weight ``alpha``), and in runs (start ``scale_p``, 3-12
  frames) scaled by [1 - ``scale``, 1 + ``scale``] about its bottom centre.
- ``blackout``: bursts (start ``burst``, 2 to ``length`` frames) miss everyone in a band of ``band`` of the width
  (or, one time in five, the whole frame); for 1-3 frames after, people there score 0.4-0.7 of their score.
"""

from __future__ import annotations

import numpy as np
from mot_noise import Sequence

Frames = list[tuple[np.ndarray, np.ndarray]]

RANGES_NEW: dict[str, dict[str, dict[str, tuple[float, float]]]] = {
    "fragments": {"low": {"start": (0.005, 0.015), "run": (3, 8), "legs": (0.2, 0.5), "whole": (0.5, 0.8)},
                  "medium": {"start": (0.015, 0.035), "run": (5, 12), "legs": (0.3, 0.6), "whole": (0.3, 0.6)},
                  "high": {"start": (0.035, 0.06), "run": (8, 20), "legs": (0.4, 0.7), "whole": (0.1, 0.4)}},
    "sizelag": {"low": {"alpha": (0.6, 0.85), "scale_p": (0.005, 0.015), "scale": (0.1, 0.2)},
                "medium": {"alpha": (0.4, 0.65), "scale_p": (0.015, 0.03), "scale": (0.15, 0.3)},
                "high": {"alpha": (0.25, 0.45), "scale_p": (0.03, 0.06), "scale": (0.25, 0.4)}},
    "blackout": {"low": {"burst": (0.008, 0.02), "band": (0.2, 0.4), "length": (2, 4)},
                 "medium": {"burst": (0.02, 0.04), "band": (0.3, 0.5), "length": (3, 6)},
                 "high": {"burst": (0.04, 0.07), "band": (0.4, 0.7), "length": (4, 10)}},
}  # fmt: skip


def _base(seq: Sequence, rng: np.random.Generator) -> dict[int, float]:
    ids = np.unique(np.concatenate([i for i, _ in seq.frames])).tolist()
    return {i: float(rng.uniform(0.5, 0.95)) for i in ids}


def _jit(box: np.ndarray, rng: np.random.Generator, sd: float = 0.01) -> np.ndarray:
    w, h = box[2] - box[0], box[3] - box[1]
    return box + rng.normal(0, sd, 4) * np.array([w, h, w, h])


def _frame(boxes: list, scores: list, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    b = np.reshape(np.array(boxes, np.float64), (-1, 4))
    if not ((b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])).all():
        raise AssertionError("a noise family made an inverted box")
    s = np.clip(np.array(scores, np.float64), 0.05, 0.99)
    order = rng.permutation(len(b))
    return b[order].astype(np.float32), s[order].astype(np.float32)


def fragments(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, run, out = _base(seq, rng), {}, []
    for ids, xyxy in seq.frames:
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            left = run.get(i, 0)
            if left == 0 and rng.random() < p["start"]:
                left = int(rng.geometric(1 / p["run"]))
            run[i] = max(left - 1, 0)
            x1, y1, x2, y2 = xyxy[j]
            h, sc = y2 - y1, base[i] + rng.normal(0, 0.05)
            if not left:
                boxes.append(_jit(xyxy[j], rng))
                scores.append(sc)
                continue
            boxes.append(_jit(np.array([x1, y1, x2, y1 + rng.uniform(0.45, 0.65) * h]), rng, 0.02))
            scores.append(sc * rng.uniform(0.6, 0.95))
            if rng.random() < p["legs"]:
                boxes.append(_jit(np.array([x1, y2 - rng.uniform(0.35, 0.55) * h, x2, y2]), rng, 0.02))
                scores.append(sc * rng.uniform(0.6, 0.95))
            if rng.random() < p["whole"]:
                boxes.append(_jit(xyxy[j], rng))
                scores.append(sc * rng.uniform(0.7, 0.9))
        out.append(_frame(boxes, scores, rng))
    return out


def sizelag(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, mean, scaled, out = _base(seq, rng), {}, {}, []
    for ids, xyxy in seq.frames:
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            prev = mean.get(i)
            m = xyxy[j].copy() if prev is None else p["alpha"] * xyxy[j] + (1 - p["alpha"]) * prev
            mean[i] = m
            left, f = scaled.get(i, (0, 1.0))
            if left == 0 and rng.random() < p["scale_p"]:
                left, f = int(rng.integers(3, 13)), rng.uniform(1 - p["scale"], 1 + p["scale"])
            scaled[i] = (max(left - 1, 0), f)
            box = m.copy()
            if left:
                cx, w, h = (m[0] + m[2]) / 2, (m[2] - m[0]) * f, (m[3] - m[1]) * f
                box = np.array([cx - w / 2, m[3] - h, cx + w / 2, m[3]])
            boxes.append(_jit(box, rng))
            scores.append(base[i] + rng.normal(0, 0.05))
        out.append(_frame(boxes, scores, rng))
    return out


def blackout(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, out = _base(seq, rng), []
    band, left, after = (0.0, 0.0), 0, 0
    for ids, xyxy in seq.frames:
        if left == 0 and after == 0 and rng.random() < p["burst"]:
            whole = rng.random() < 0.2
            w = seq.width * (1.0 if whole else p["band"])
            x0 = 0.0 if whole else rng.uniform(0, seq.width - w)
            band, left, after = (x0, x0 + w), int(rng.integers(2, int(p["length"]) + 1)), int(rng.integers(1, 4))
        cx = (xyxy[:, 0] + xyxy[:, 2]) / 2
        inside = (cx >= band[0]) & (cx <= band[1])
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            sc = base[i] + rng.normal(0, 0.05)
            if inside[j] and left:
                continue
            boxes.append(_jit(xyxy[j], rng))
            scores.append(sc * (rng.uniform(0.4, 0.7) if inside[j] and after and not left else 1.0))
        if left:
            left -= 1
        elif after:
            after -= 1
        out.append(_frame(boxes, scores, rng))
    return out


FAMILIES_NEW = {"fragments": fragments, "sizelag": sizelag, "blackout": blackout}
