"""Regions of interest for inspection: a rectangle or a polygon in frame pixels (numpy only).

Two membership tests, both vectorised over boxes ``xyxy`` (ndarray[N, 4]):
- ``contains_centres``: the box centre lies inside the region (a centre on the edge counts as inside);
- ``overlap_fraction``: the fraction of each box's area that lies inside the region (a polygon is clipped
  against each box by Sutherland-Hodgman clipping, exact for any simple polygon, convex or not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from y9core.shorten import quoted

MAX_POLYGON_POINTS = 1_000  # vertices of one region (each box is clipped against every edge: work grows with it)
MAX_COORD = 1_000_000  # |x| and |y| of any region, zone or count-line point, in frame pixels (frames: <= 16,384)


def check_coords(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    """``values`` as float64; one ValueError sentence naming ``what`` when a coordinate is not finite or lies
    beyond +-MAX_COORD pixels (checked before any area or cross product is computed from them)."""
    v = np.asarray(values, dtype=np.float64)
    flat = v.reshape(-1)
    bad = np.flatnonzero(~(np.abs(flat) <= MAX_COORD))  # NaN and inf too
    if bad.size:
        raise ValueError(f"{what} has the coordinate {flat[bad[0]]:g} (number {bad[0] + 1}); expected finite frame "
                         f"pixels within +-{MAX_COORD:,}.")  # fmt: skip
    return v


def outside_frame(bounds: tuple[float, float, float, float], h: int, w: int) -> bool:
    """Whether the rectangle ``bounds`` (x1, y1, x2, y2) lies wholly outside an ``h`` x ``w`` frame."""
    x1, y1, x2, y2 = bounds
    return x2 < 0 or y2 < 0 or x1 > w or y1 > h


@dataclass(frozen=True, eq=False)
class Region:
    """A named region: ``rect`` (x1, y1, x2, y2) or ``polygon`` (ndarray[P, 2] of x, y vertices,
    3 <= P <= ``MAX_POLYGON_POINTS``)."""

    name: str
    rect: tuple[float, float, float, float] | None = None
    polygon: np.ndarray | None = None
    kind: str = field(default="region", repr=False)  # how messages call it ("zone" for a counting zone)

    def __post_init__(self) -> None:
        who = f"{self.kind} {quoted(self.name, 60)}"
        if (self.rect is None) == (self.polygon is None):
            raise ValueError(f"{who}: give exactly one of rect or polygon.")
        if self.rect is not None:
            x1, y1, x2, y2 = check_coords(self.rect, f"{who}: rect").tolist()
            if not (x2 > x1 and y2 > y1):
                raise ValueError(
                    f"{who}: rect {tuple(self.rect)} is empty; expected (x1, y1, x2, y2) with x2 > x1 and y2 > y1."
                )
            object.__setattr__(self, "rect", (x1, y1, x2, y2))
        else:
            poly = np.asarray(self.polygon, dtype=np.float64)
            if poly.ndim != 2 or poly.shape[1] != 2 or not 3 <= poly.shape[0] <= MAX_POLYGON_POINTS:
                got = f"{poly.shape[0]:,} points" if poly.ndim == 2 and poly.shape[1] == 2 else f"shape {poly.shape}"
                raise ValueError(
                    f"{who}: polygon has {got}; expected 3 to {MAX_POLYGON_POINTS:,} [x, y] points (simplify a "
                    "longer outline, e.g. with cv2.approxPolyDP)."
                )
            check_coords(poly, f"{who}: polygon")
            if abs(polygon_area(poly)) == 0:
                raise ValueError(f"{who}: polygon has zero area; expected a proper polygon.")
            object.__setattr__(self, "polygon", poly)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(x1, y1, x2, y2) of the region's bounding rectangle."""
        if self.rect is not None:
            return self.rect
        p = self.polygon
        return float(p[:, 0].min()), float(p[:, 1].min()), float(p[:, 0].max()), float(p[:, 1].max())

    def contains_points(self, xy: np.ndarray) -> np.ndarray:
        """Boolean ndarray[N]: which points (ndarray[N, 2]) lie inside (edges of a rect count as inside)."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        if self.rect is not None:
            x1, y1, x2, y2 = self.rect
            return (xy[:, 0] >= x1) & (xy[:, 0] <= x2) & (xy[:, 1] >= y1) & (xy[:, 1] <= y2)
        return points_in_polygon(xy, self.polygon)

    def contains_centres(self, xyxy: np.ndarray) -> np.ndarray:
        """Boolean ndarray[N]: which boxes have their centre inside."""
        b = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
        return self.contains_points(np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2], axis=1))

    def overlap_fraction(self, xyxy: np.ndarray) -> np.ndarray:
        """ndarray[N] float64: the fraction of each box's area inside the region (0 for an empty box)."""
        b = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
        area = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
        if self.rect is not None:
            x1, y1, x2, y2 = self.rect
            iw = np.clip(np.minimum(b[:, 2], x2) - np.maximum(b[:, 0], x1), 0, None)
            ih = np.clip(np.minimum(b[:, 3], y2) - np.maximum(b[:, 1], y1), 0, None)
            inter = iw * ih
        else:
            inter = np.array([abs(polygon_area(clip_polygon_to_rect(self.polygon, box))) for box in b])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(area > 0, inter / np.where(area > 0, area, 1), 0.0)

    def to_dict(self) -> dict:
        if self.rect is not None:
            return {"name": self.name, "rect": list(self.rect)}
        return {"name": self.name, "polygon": self.polygon.tolist()}


def polygon_area(poly: np.ndarray) -> float:
    """Signed area of a polygon (ndarray[P, 2]) by the shoelace formula (positive when counter-clockwise)."""
    if len(poly) < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def points_in_polygon(xy: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Even-odd (ray casting) test of points ndarray[N, 2] against a polygon ndarray[P, 2]; points on an edge
    count as inside."""
    x, y = xy[:, 0:1], xy[:, 1:2]  # [N, 1] against the P edges
    x0, y0 = poly[:, 0][None, :], poly[:, 1][None, :]
    x1, y1 = np.roll(poly[:, 0], -1)[None, :], np.roll(poly[:, 1], -1)[None, :]
    crosses = (y0 > y) != (y1 > y)
    with np.errstate(invalid="ignore", divide="ignore"):
        x_at = x0 + (y - y0) * (x1 - x0) / np.where(y1 != y0, y1 - y0, 1)
    inside = (np.count_nonzero(crosses & (x < x_at), axis=1) % 2) == 1
    # on an edge: collinear with the segment and within its extent
    cross = (x1 - x0) * (y - y0) - (y1 - y0) * (x - x0)
    within = (
        (np.minimum(x0, x1) <= x)
        & (x <= np.maximum(x0, x1))
        & (np.minimum(y0, y1) <= y)
        & (y <= np.maximum(y0, y1))
    )
    on_edge = np.any((np.abs(cross) <= 1e-9) & within, axis=1)
    return inside | on_edge


def clip_polygon_to_rect(poly: np.ndarray, box: Sequence[float]) -> np.ndarray:
    """The part of ``poly`` inside the rectangle ``box`` (x1, y1, x2, y2), by Sutherland-Hodgman clipping
    against the rectangle's four edges; its area is exact for any simple polygon."""
    x1, y1, x2, y2 = (float(v) for v in box)
    pts = [tuple(p) for p in np.asarray(poly, dtype=np.float64)]
    # (coordinate index, limit, keep the side >= limit?)
    for axis, limit, keep_ge in ((0, x1, True), (0, x2, False), (1, y1, True), (1, y2, False)):
        if not pts:
            break

        def inside(p, axis=axis, limit=limit, keep_ge=keep_ge):
            return p[axis] >= limit if keep_ge else p[axis] <= limit

        out = []
        for i, cur in enumerate(pts):
            prev = pts[i - 1]
            if inside(cur):
                if not inside(prev):
                    out.append(_cut(prev, cur, axis, limit))
                out.append(cur)
            elif inside(prev):
                out.append(_cut(prev, cur, axis, limit))
        pts = out
    return np.asarray(pts, dtype=np.float64).reshape(-1, 2)


def _cut(a: tuple, b: tuple, axis: int, limit: float) -> tuple[float, float]:
    t = (limit - a[axis]) / (b[axis] - a[axis])
    return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
