"""Ground truth of public MOT sequences and the noise model that turns it into detector-like detections (the
tracking benchmark ``bench_mot.py``; pure numpy, no tracker imported).

Ground truth: the TUD-Campus (71 frames) and TUD-Stadtmitte (179 frames) sequences (640x480, 25 fps, static
camera, pedestrians) whose MOTChallenge ``gt.txt`` files ship inside the ``motmetrics`` wheel
(``motmetrics/data/<seq>/gt.txt``; rows ``frame, id, x, y, w, h, ...``).

Noise model, per frame and ground-truth box (``LEVELS``; one draw per level and seed, the same for every tracker):
miss with probability ``miss``; edge jitter sd ``jitter`` of the width / height; a base score per object in
[0.5, 0.95] (noise-free: 0.9) plus noise sd ``score_sd``, clipped to [0.05, 0.99]; a duplicate (a shifted, rescaled
copy at IoU 0.3-0.6, 0.55-0.85 of the score: issue 45's case, a 0.57 box at IoU 0.44 of a 0.8 one) in a fraction
``dup`` of the frames, going on with probability ``DUP_KEEP`` at the same place relative to its object; a Poisson
number (mean ``fp``) of false positives of ground-truth sizes anywhere, scored 0.1-0.6.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

DUP_KEEP = 0.8  # a duplicate goes on in the next frame with this probability (mean run: 5 frames)
SEQUENCES = {"TUD-Campus": (640, 480, 25.0), "TUD-Stadtmitte": (640, 480, 25.0)}  # width, height, fps


@dataclass(frozen=True)
class Level:
    name: str
    miss: float
    jitter: float
    score_sd: float
    dup: float
    fp: float


LEVELS = {
    "none": Level("none", 0.0, 0.0, 0.0, 0.0, 0.0),
    "low": Level("low", 0.05, 0.02, 0.05, 0.03, 0.2),
    "medium": Level("medium", 0.15, 0.04, 0.10, 0.08, 0.5),
    "high": Level("high", 0.30, 0.07, 0.15, 0.15, 1.0),
}


@dataclass(frozen=True)
class Sequence:
    """Ground truth: ``frames[k]`` = (ids ndarray[N] int64, xyxy ndarray[N, 4] float64) of frame k (0-based)."""

    name: str
    width: int
    height: int
    fps: float
    frames: list[tuple[np.ndarray, np.ndarray]]


def motmetrics_data() -> Path:
    """The folder of the ground truth the motmetrics wheel ships."""
    import motmetrics

    return Path(motmetrics.__file__).parent / "data"


def load_sequence(name: str, root: Path | None = None) -> Sequence:
    """One MOTChallenge ``gt.txt`` -> Sequence (rows with a zero 'consider' flag are left out)."""
    width, height, fps = SEQUENCES[name]
    rows = np.loadtxt((root or motmetrics_data()) / name / "gt.txt", delimiter=",", ndmin=2)
    rows = rows[rows[:, 6] != 0]
    n = int(rows[:, 0].max())
    frames = []
    for k in range(1, n + 1):
        r = rows[rows[:, 0] == k]
        xyxy = np.concatenate([r[:, 2:4], r[:, 2:4] + r[:, 4:6]], 1)
        frames.append((r[:, 1].astype(np.int64), xyxy))
    return Sequence(name, width, height, fps, frames)


def _iou_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    lt, rb = np.maximum(a[:, :2], b[:, :2]), np.minimum(a[:, 2:], b[:, 2:])
    inter = np.clip(rb - lt, 0, None).prod(1)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def apply_offset(box: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``box`` (xyxy) moved and rescaled by ``offset`` (centre shift and size ratio, in units of its size)."""
    wh = box[2:] - box[:2]
    c = (box[:2] + box[2:]) / 2 + offset[:2] * wh
    s = offset[2:] * wh
    return np.concatenate([c - s / 2, c + s / 2])


def duplicate_offset(box: np.ndarray, rng: np.random.Generator, lo: float = 0.3, hi: float = 0.6) -> np.ndarray:
    """An offset (``apply_offset``) that makes a box overlapping ``box`` by an IoU in [lo, hi] (rejection sampling)."""
    for _ in range(100):
        off = np.concatenate([rng.uniform(-0.5, 0.5, 2), rng.uniform(0.6, 1.3, 2)])
        if lo <= _iou_pairs(box[None], apply_offset(box, off)[None])[0] <= hi:
            return off
    return np.array([0.4, 0.0, 1.0, 1.0])  # IoU 0.43 when all tries failed


def make_detections(seq: Sequence, level: Level, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The noisy detections of ``seq``: one (xyxy ndarray[N, 4] float32, score ndarray[N] float32) per frame."""
    rng = np.random.default_rng([seed, sum(map(ord, seq.name)), sum(map(ord, level.name))])
    all_ids = np.unique(np.concatenate([ids for ids, _ in seq.frames]))
    noisy = level.name != "none"
    base = dict(zip(all_ids.tolist(), rng.uniform(0.5, 0.95, len(all_ids)) if noisy else np.full(len(all_ids), 0.9)))
    sizes = np.concatenate([b[:, 2:] - b[:, :2] for _, b in seq.frames])
    dups: dict[int, tuple[np.ndarray, float]] = {}
    start_p = (1 - DUP_KEEP) * level.dup / (1 - level.dup)  # so that a fraction ``dup`` of the frames has one
    out = []
    for ids, xyxy in seq.frames:
        keep = rng.random(len(ids)) >= level.miss
        ids, box = ids[keep], xyxy[keep].copy()
        w, h = box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]
        box += rng.normal(0, 1, box.shape) * level.jitter * np.stack([w, h, w, h], 1)
        score = np.array([base[i] for i in ids.tolist()]) + rng.normal(0, level.score_sd, len(ids))
        score = np.clip(score, 0.05, 0.99)
        boxes, scores = [box], [score]
        for i, b, sc in zip(ids.tolist(), box, score):  # duplicates: (offset, score ratio) per object while on
            on = dups.get(i)
            if on is not None and rng.random() >= DUP_KEEP:
                del dups[i]
                on = None
            if on is None and level.dup and rng.random() < start_p:
                on = dups[i] = (duplicate_offset(b, rng), rng.uniform(0.55, 0.85))
            if on is not None:
                boxes.append(apply_offset(b, on[0])[None])
                scores.append(np.array([sc * on[1]]))
        nfp = rng.poisson(level.fp) if level.fp else 0
        if nfp:
            s = sizes[rng.integers(0, len(sizes), nfp)]
            p = rng.uniform(0, 1, (nfp, 2)) * ([seq.width, seq.height] - s)
            boxes.append(np.concatenate([p, p + s], 1))
            scores.append(rng.uniform(0.1, 0.6, nfp))
        b, sc = np.concatenate(boxes), np.concatenate(scores)
        order = rng.permutation(len(b))  # a detector's order says nothing about identity
        out.append((b[order].astype(np.float32), sc[order].astype(np.float32)))
    return out


def crowd_scene(objects: int = 100, frames: int = 300, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The timing scene: ``objects`` boxes of 40x40 px on a 10-column grid of a 1920x1080 frame moving 2 px a frame,
    0.5 px jitter, scores uniform in [0.3, 0.95] (``bench_tracking.py``'s scene: every frame holds ``objects``
    detections)."""
    rng = np.random.default_rng(seed)
    grid = np.stack([np.arange(objects) % 10 * 180 + 20, np.arange(objects) // 10 * 100 + 20], 1).astype(float)
    out = []
    for t in range(frames):
        p = grid + 2 * t
        box = np.concatenate([p, p + 40], 1) + rng.normal(0, 0.5, (objects, 4))
        out.append((box.astype(np.float32), rng.uniform(0.3, 0.95, objects).astype(np.float32)))
    return out
