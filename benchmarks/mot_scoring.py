"""Scores of one tracker's output against ground truth (``bench_mot.py``): CLEAR MOT and identity counts by
``motmetrics`` (IoU at least 0.5), HOTA by ``trackeval`` (its HOTA metric over IoU thresholds 0.05-0.95), and line
and zone counts by y9's counting (the same counter on the ground-truth tracks and on each tracker's tracks).

A frame is ``(ids ndarray[N] int64, xyxy ndarray[N, 4])`` for the ground truth and ``(xyxy, ids)`` for a tracker.
"""

from __future__ import annotations

import numpy as np

RAW = ("num_objects", "num_false_positives", "num_misses", "num_switches", "idtp", "idfp", "idfn")


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(2)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)


def clear_identity(gt: list, out: list) -> dict[str, int]:
    """motmetrics' raw counts (``RAW``) of one sequence; the distance is 1 - IoU, pairs under IoU 0.5 excluded
    (motmetrics' own ``iou_matrix`` uses ``np.asfarray``, gone in numpy 2: the same matrix is computed here)."""
    import motmetrics as mm

    acc = mm.MOTAccumulator(auto_id=True)
    for (gid, gbox), (tbox, tid) in zip(gt, out):
        d = 1 - iou_matrix(gbox, tbox)
        d[d > 0.5] = np.nan
        acc.update(gid.tolist(), np.asarray(tid).tolist(), d)
    row = mm.metrics.create().compute(acc, metrics=list(RAW), name="seq")
    return {k: int(row[k].iloc[0]) for k in RAW}


def summarise(raw: dict[str, int]) -> dict[str, float]:
    """MOTA and IDF1 from raw counts (summed over sequences: motmetrics' OVERALL)."""
    n = max(raw["num_objects"], 1)
    mota = 1 - (raw["num_misses"] + raw["num_false_positives"] + raw["num_switches"]) / n
    idf1 = 2 * raw["idtp"] / max(2 * raw["idtp"] + raw["idfp"] + raw["idfn"], 1)
    return {"mota": mota, "idf1": idf1, "idsw": raw["num_switches"]}


def hota_sequence(gt: list, out: list) -> dict:
    """trackeval's HOTA result of one sequence (ids renumbered 0.. as trackeval expects)."""
    from trackeval.metrics import HOTA

    gmap = {v: i for i, v in enumerate(np.unique(np.concatenate([g for g, _ in gt] + [np.zeros(0, np.int64)])))}
    tmap = {v: i for i, v in enumerate(np.unique(np.concatenate([np.asarray(t, np.int64) for _, t in out] +
                                                                [np.zeros(0, np.int64)])))}  # fmt: skip
    data = {"num_timesteps": len(gt), "num_gt_ids": len(gmap), "num_tracker_ids": len(tmap),
            "num_gt_dets": int(sum(len(g) for g, _ in gt)), "num_tracker_dets": int(sum(len(t) for _, t in out)),
            "gt_ids": [np.array([gmap[v] for v in g.tolist()], int) for g, _ in gt],
            "tracker_ids": [np.array([tmap[v] for v in np.asarray(t).tolist()], int) for _, t in out],
            "similarity_scores": [iou_matrix(gb, tb) for (_, gb), (tb, _) in zip(gt, out)]}  # fmt: skip
    return HOTA().eval_sequence(data)


def hota_combined(results: dict[str, dict]) -> float:
    """HOTA over several sequences (trackeval's combination), the mean over its IoU thresholds."""
    from trackeval.metrics import HOTA

    return float(np.mean(HOTA().combine_sequences(results)["HOTA"]))


def counting_geometry(width: int, height: int, sightings: int | None = None):
    """The benchmark's counting rules for a frame of ``width`` x ``height``: a vertical line through the middle
    (pedestrians walk sideways; ``sightings`` in a row confirm a crossing, None: ``CountLine``'s default) and a zone
    over the middle half of the frame."""
    from y9deploy.tracking.counting import CROSSING_SIGHTINGS, CountLine, Zone

    line = CountLine.parse(f"{width / 2},0,{width / 2},{height}", "middle", sightings or CROSSING_SIGHTINGS)
    x1, x2 = width / 4, 3 * width / 4
    zone = Zone.parse(f"{x1},0,{x2},0,{x2},{height},{x1},{height}", "centre")
    return line, zone


def counts(frames: list, width: int, height: int, fps: float, sightings: int | None = None) -> tuple[int, int, int]:
    """(line in, line out, zone visits) of tracks given as frames of (xyxy, ids), by y9's ``Counting``
    (``sightings``: ``counting_geometry``'s)."""
    from y9deploy.detections import Detections
    from y9deploy.tracking.counting import Counting

    line, zone = counting_geometry(width, height, sightings)
    counter = Counting([line], [zone])
    for k, (xyxy, ids) in enumerate(frames):
        n = len(ids)
        dets = Detections(np.asarray(xyxy, np.float32).reshape(-1, 4), np.ones(n, np.float32), np.zeros(n, np.int64),
                          ["object"])  # fmt: skip
        counter.update(dets, np.asarray(ids, np.int64), k / fps)
    s = counter.summary()
    return s.lines["middle"]["total_in"], s.lines["middle"]["total_out"], s.zones["centre"]["visits"]
