"""Noise families for the tracking benchmark (``bench_mot.py --families``, issue 53): several kinds of detector error
of different structure, each at three levels, with each family's parameters drawn per sequence and seed from
ranges (so that a rule cannot fit one setting). Pure numpy, no tracker imported.

Base of every family: a score per object in [0.5, 0.95], score noise sd 0.05 a frame, edge jitter sd 0.01 of the size.

- ``occlusion``: hidden in runs (start ``p_start``, mean length ``run``); a person covered > 30% by a box lower in the
  image hidden with probability ``q`` (staying hidden at 0.8 while covered), else scored 0.5-0.8 of his score.
- ``duplicates``: a second box (same size shifted by ``shift`` of the width or height, or the top 50-75%) at
  0.85-1.05 of the score, in runs (on ``frac`` of the frames, going on with ``keep``); the true box missed (``miss``).
- ``clutter``: each person spawns (``rate`` a frame) a false positive 0.5-1.5 widths aside, 0.7-1.2 of his size,
  following him or still, scored 0.3-0.8, living 2 to ``life`` frames.
- ``shaky``: edge jitter sd ``jit`` x size x median height / height, correlated by ``rho``; dropped frames (runs of
  1 to ``drop_len`` starting with ``drop``).
- ``lowscore``: ``low_frac`` of the people score 0.15-0.45; scores dip to 0.3-0.6 in runs (start ``dip``, 3-10
  frames); noise sd ``sd``; misses ``miss``.
- ``iid``: issue 45's ``mot_noise`` (independent misses, jitter, duplicates, false positives), fixed levels.

The split (reported apart): rules and constants are chosen on ``TUNING`` only, never on ``HELD_OUT``. Each round's
held-out set was committed before its changes, run once at its end, then joined the tuning set: round 1's (clutter,
shaky, lowscore; seeds 100-102), round 2's (``mot_families_new``; 200-202); round 3's is ``mot_families_r3``'s (300-302).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mot_families_new import FAMILIES_NEW, RANGES_NEW
from mot_families_r3 import FAMILIES_R3, RANGES_R3, warp_box
from mot_noise import LEVELS as IID_LEVELS
from mot_noise import Sequence, apply_offset, make_detections

FAMILY_LEVELS = ("low", "medium", "high")
# seeds: one tuple for every family, or family -> its seeds (seen since: 0-2 round 1, 100-102 and 200-202 the end
# of rounds 1 and 2; HELD_OUT unseen before the end of round 3).
TUNING = {"families": ("iid", "occlusion", "duplicates", "clutter", "shaky", "lowscore", "fragments", "sizelag", "blackout"),
          "seeds": {"iid": (0, 1, 2), "occlusion": (0, 1, 2), "duplicates": (0, 1, 2),
                    "clutter": (100, 101, 102), "shaky": (100, 101, 102), "lowscore": (100, 101, 102),
                    "fragments": (200, 201, 202), "sizelag": (200, 201, 202), "blackout": (200, 201, 202)}}  # fmt: skip
HELD_OUT = {"families": ("drone", "merge", "convention", "crossghost"), "seeds": (300, 301, 302)}

# Per family and level: parameter -> (low, high) of the uniform draw made once per sequence and seed.
RANGES: dict[str, dict[str, dict[str, tuple[float, float]]]] = {
    "occlusion": {"low": {"p_start": (0.005, 0.015), "run": (3, 6), "q": (0.1, 0.3)},
                  "medium": {"p_start": (0.015, 0.035), "run": (4, 10), "q": (0.3, 0.6)},
                  "high": {"p_start": (0.03, 0.06), "run": (6, 15), "q": (0.5, 0.9)}},
    "duplicates": {"low": {"frac": (0.03, 0.08), "keep": (0.7, 0.9), "shift": (0.15, 0.3), "miss": (0.01, 0.03)},
                   "medium": {"frac": (0.08, 0.2), "keep": (0.75, 0.9), "shift": (0.15, 0.4), "miss": (0.03, 0.08)},
                   "high": {"frac": (0.2, 0.35), "keep": (0.8, 0.95), "shift": (0.15, 0.45), "miss": (0.08, 0.15)}},
    "clutter": {"low": {"rate": (0.003, 0.008), "life": (3, 5)}, "medium": {"rate": (0.008, 0.02), "life": (3, 8)},
                "high": {"rate": (0.02, 0.04), "life": (4, 10)}},
    "shaky": {"low": {"jit": (0.015, 0.03), "rho": (0.0, 0.5), "drop": (0.005, 0.01), "drop_len": (1, 2)},
              "medium": {"jit": (0.03, 0.06), "rho": (0.0, 0.6), "drop": (0.01, 0.025), "drop_len": (1, 3)},
              "high": {"jit": (0.06, 0.1), "rho": (0.2, 0.7), "drop": (0.025, 0.05), "drop_len": (2, 4)}},
    "lowscore": {"low": {"low_frac": (0.1, 0.25), "dip": (0.005, 0.015), "sd": (0.03, 0.06), "miss": (0.0, 0.02)},
                 "medium": {"low_frac": (0.25, 0.45), "dip": (0.015, 0.03), "sd": (0.05, 0.1), "miss": (0.02, 0.06)},
                 "high": {"low_frac": (0.45, 0.7), "dip": (0.03, 0.06), "sd": (0.08, 0.14), "miss": (0.05, 0.12)}},
}  # fmt: skip

Frames = list[tuple[np.ndarray, np.ndarray]]


def draw_params(family: str, level: str, rng: np.random.Generator) -> dict[str, float]:
    """One sequence's parameters of ``family`` at ``level``: a uniform draw in each range of ``RANGES``."""
    return {k: float(rng.uniform(lo, hi)) for k, (lo, hi) in RANGES[family][level].items()}


def _base(seq: Sequence, rng: np.random.Generator, low_frac: float = 0.0) -> dict[int, float]:
    ids = np.unique(np.concatenate([i for i, _ in seq.frames])).tolist()
    low = rng.random(len(ids)) < low_frac
    return {i: float(rng.uniform(0.15, 0.45) if lo else rng.uniform(0.5, 0.95)) for i, lo in zip(ids, low)}


def _jitter(box: np.ndarray, rng: np.random.Generator, sd: float | np.ndarray) -> np.ndarray:
    w, h = box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]
    return box + rng.normal(0, 1, box.shape) * np.asarray(sd).reshape(-1, 1) * np.stack([w, h, w, h], 1)


def _frame(boxes: list, scores: list, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    b = np.concatenate([np.reshape(x, (-1, 4)) for x in boxes]) if boxes else np.zeros((0, 4))
    s = np.clip(np.concatenate([np.reshape(x, -1) for x in scores]) if scores else np.zeros(0), 0.05, 0.99)
    order = rng.permutation(len(b))  # a detector's order says nothing about identity
    return b[order].astype(np.float32), s[order].astype(np.float32)


def _covered(box: np.ndarray) -> np.ndarray:
    """ndarray[N] bool: which boxes are covered by more than 30% of their area by a box lower in the image."""
    lt = np.maximum(box[:, None, :2], box[None, :, :2])
    rb = np.minimum(box[:, None, 2:], box[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(2)
    area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
    nearer = box[None, :, 3] > box[:, None, 3]
    return ((inter / np.maximum(area[:, None], 1e-9) > 0.3) & nearer).any(1)


def occlusion(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, run, hidden, out = _base(seq, rng), {}, {}, []
    for ids, xyxy in seq.frames:
        cov = _covered(xyxy)
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            left = run.get(i, 0)
            if left == 0 and rng.random() < p["p_start"]:
                left = int(rng.geometric(1 / p["run"]))
            run[i] = max(left - 1, 0)
            hid = bool(cov[j]) and ((hidden.get(i, False) and rng.random() < 0.8) or rng.random() < p["q"])
            hidden[i] = hid
            if left or hid:
                continue
            sc = base[i] + rng.normal(0, 0.05)
            boxes.append(_jitter(xyxy[j : j + 1], rng, 0.01))
            scores.append(sc * (rng.uniform(0.5, 0.8) if cov[j] else 1.0))
        out.append(_frame(boxes, scores, rng))
    return out


def _dup_offset(rng: np.random.Generator, shift: float) -> np.ndarray:
    if rng.random() < 0.5:  # a part box: the upper 50-75%
        f = rng.uniform(0.5, 0.75)
        return np.array([0.0, -(1 - f) / 2, 1.0, f])
    axis = rng.integers(0, 2)
    off = np.array([0.0, 0.0, 1.0, 1.0])
    off[axis] = shift * rng.choice([-1, 1])
    return off


def duplicates(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, dups, out = _base(seq, rng), {}, []
    start = (1 - p["keep"]) * p["frac"] / (1 - p["frac"])
    for ids, xyxy in seq.frames:
        box = _jitter(xyxy, rng, 0.01)
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            sc = base[i] + rng.normal(0, 0.05)
            on = dups.get(i)
            if on is not None and rng.random() >= p["keep"]:
                del dups[i]
                on = None
            if on is None and rng.random() < start:
                on = dups[i] = (_dup_offset(rng, p["shift"]), rng.uniform(0.85, 1.05))
            if rng.random() >= p["miss"]:
                boxes.append(box[j])
                scores.append(sc)
            if on is not None:
                boxes.append(apply_offset(box[j], on[0]))
                scores.append(sc * on[1] + rng.normal(0, 0.02))
        out.append(_frame(boxes, scores, rng))
    return out


def clutter(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, ghosts, out = _base(seq, rng), [], []  # ghost: [owner id, offset, frames left, score, follows, box]
    for ids, xyxy in seq.frames:
        box = _jitter(xyxy, rng, 0.01)
        boxes = [box]
        scores = [np.array([base[i] for i in ids.tolist()]) + rng.normal(0, 0.05, len(ids))]
        where = dict(zip(ids.tolist(), xyxy))
        for i in ids.tolist():
            if rng.random() < p["rate"]:
                off = np.array([rng.uniform(0.5, 1.5) * rng.choice([-1, 1]), rng.uniform(-0.2, 0.2),
                                *rng.uniform(0.7, 1.2, 2)])  # fmt: skip
                life = int(rng.integers(2, int(p["life"]) + 1))
                ghosts.append([i, off, life, rng.uniform(0.3, 0.8), rng.random() < 0.5,
                               apply_offset(where[i], off)])  # fmt: skip
        for g in ghosts:
            if g[4] and g[0] in where:
                g[5] = apply_offset(where[g[0]], g[1])
            boxes.append(_jitter(g[5][None], rng, 0.02)[0])
            scores.append(g[3] + rng.normal(0, 0.05))
            g[2] -= 1
        ghosts = [g for g in ghosts if g[2] > 0]
        out.append(_frame(boxes, scores, rng))
    return out


def shaky(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, noise, drop_left, out = _base(seq, rng), {}, 0, []
    h_ref = float(np.median(np.concatenate([b[:, 3] - b[:, 1] for _, b in seq.frames])))
    for ids, xyxy in seq.frames:
        if drop_left == 0 and rng.random() < p["drop"]:
            drop_left = int(rng.integers(1, int(p["drop_len"]) + 1))
        if drop_left:
            drop_left -= 1
            out.append(_frame([], [], rng))
            continue
        sd = p["jit"] * h_ref / np.maximum(xyxy[:, 3] - xyxy[:, 1], 1.0)
        w, h = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
        z = np.stack([noise.get(i, np.zeros(4)) * p["rho"] + rng.normal(0, 1, 4) * np.sqrt(1 - p["rho"] ** 2)
                      for i in ids.tolist()]) if len(ids) else np.zeros((0, 4))  # fmt: skip
        noise.update(zip(ids.tolist(), z))
        box = xyxy + z * sd[:, None] * np.stack([w, h, w, h], 1)
        score = np.array([base[i] for i in ids.tolist()]) + rng.normal(0, 0.05, len(ids))
        out.append(_frame([box], [score], rng))
    return out


def lowscore(seq: Sequence, p: dict, rng: np.random.Generator) -> Frames:
    base, dip, out = _base(seq, rng, p["low_frac"]), {}, []
    for ids, xyxy in seq.frames:
        box = _jitter(xyxy, rng, 0.01)
        boxes, scores = [], []
        for j, i in enumerate(ids.tolist()):
            left, factor = dip.get(i, (0, 1.0))
            if left == 0 and rng.random() < p["dip"]:
                left, factor = int(rng.integers(3, 11)), rng.uniform(0.3, 0.6)
            dip[i] = (max(left - 1, 0), factor)
            if rng.random() < p["miss"]:
                continue
            boxes.append(box[j])
            scores.append(base[i] * (factor if left else 1.0) + rng.normal(0, p["sd"]))
        out.append(_frame(boxes, scores, rng))
    return out


FAMILIES: dict[str, Callable[[Sequence, dict, np.random.Generator], Frames]] = {
    "occlusion": occlusion, "duplicates": duplicates, "clutter": clutter, "shaky": shaky, "lowscore": lowscore,
    **FAMILIES_NEW, **FAMILIES_R3,
}  # fmt: skip
RANGES.update(RANGES_NEW)
RANGES.update(RANGES_R3)


def split_seeds(split: dict, family: str) -> tuple[int, ...]:
    """The seeds of ``family`` in ``split`` (``TUNING`` or ``HELD_OUT``)."""
    seeds = split["seeds"]
    return tuple(seeds[family] if isinstance(seeds, dict) else seeds)


def family_detections(seq: Sequence, family: str, level: str, seed: int) -> tuple[Frames, dict]:
    """The detections of ``seq`` under ``family`` at ``level`` for ``seed`` -> (frames of (xyxy, score), the
    parameters drawn for this sequence and seed; for a moving camera (``drone``) ``"warp"``: the per-frame
    similarities that ``unwarp`` undoes on a tracker's output)."""
    if family == "iid":
        return make_detections(seq, IID_LEVELS[level], seed), {}
    rng = np.random.default_rng([seed, sum(map(ord, seq.name)), sum(map(ord, family)), sum(map(ord, level))])
    params = draw_params(family, level, rng)
    return FAMILIES[family](seq, params, rng), params


def unwarp(seq: Sequence, out: list, warp: np.ndarray | None) -> list:
    """A tracker's per-frame (boxes, ids) on a moving camera's image -> the same in scene coordinates (``warp`` None:
    unchanged)."""
    if warp is None:
        return out
    centre = np.array([seq.width / 2, seq.height / 2])
    return [(warp_box(np.asarray(b, np.float64).reshape(-1, 4), w, centre, inverse=True), i)
            for (b, i), w in zip(out, warp)]  # fmt: skip
