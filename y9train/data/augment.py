"""Augmentations on uint8 BGR images with pixel labels.

Labels here are ndarray[n, 5] float32 rows ``(class, x1, y1, x2, y2)`` in pixels of the image they belong to;
coordinates are continuous (pixel ``i`` spans ``[i, i + 1)``). Geometric transforms are 3x3 matrices acting on
those coordinates; ``warp_image`` converts them to OpenCV's pixel-centre convention, so a matrix moves pixels
and boxes alike (a horizontal flip folded into the matrix mirrors pixels exactly).

The mosaic path is lean: four cached tiles are copied into a 2s x 2s canvas, then one ``cv2.warpAffine`` takes
the canvas straight to the output size (scale, translation, optional rotation/shear and the flips folded into
one matrix); HSV is one LUT pass in HSV space; everything stays uint8.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, fields

import cv2
import numpy as np

from y9train.value_ranges import FRACTION, NON_NEGATIVE, PROBABILITY, Range, check_ranges

FILL = 114  # grey of padding and empty mosaic areas

# allowed values of each AugmentConfig field (``Hyp`` checks its augmentation fields against this table too)
AUGMENT_RANGES: dict[str, Range] = {
    "mosaic": PROBABILITY,
    "mixup": PROBABILITY,
    "copy_paste": PROBABILITY,
    "fliplr": PROBABILITY,
    "flipud": PROBABILITY,
    "degrees": Range(0.0, 180.0, what="+- degrees of rotation"),
    "shear": Range(0.0, 45.0, what="+- degrees of shear"),
    "translate": Range(0.0, 1.0, what="+- fraction of the image size"),
    "scale": Range(0.0, 1.0, hi_open=True, what="gain drawn from [1 - scale, 1 + scale]"),
    "hsv_h": Range(0.0, 1.0, what="+- fractional hue gain"),
    "hsv_s": Range(0.0, 1.0, what="+- fractional saturation gain"),
    "hsv_v": Range(0.0, 1.0, what="+- fractional value gain"),
    "min_wh": NON_NEGATIVE,
    "min_area_ratio": FRACTION,
    "max_aspect": Range(1.0, what="largest box aspect ratio kept"),
}


@dataclass
class AugmentConfig:
    """Augmentation hyperparameters (probabilities and ranges).

    mosaic/mixup/copy_paste/fliplr/flipud: probabilities; degrees/shear: +- degrees; translate: +- fraction
    of the output size; scale: gain drawn from [1 - scale, 1 + scale]; hsv_*: +- fractional gains.
    Box filter after a warp: width and height > ``min_wh`` pixels, kept area > ``min_area_ratio`` of the
    transformed box, aspect ratio < ``max_aspect``.
    """

    mosaic: float = 1.0
    mixup: float = 0.15
    copy_paste: float = 0.0
    degrees: float = 0.0
    translate: float = 0.1
    scale: float = 0.9
    shear: float = 0.0
    hsv_h: float = 0.015
    hsv_s: float = 0.7
    hsv_v: float = 0.4
    fliplr: float = 0.5
    flipud: float = 0.0
    min_wh: float = 2.0
    min_area_ratio: float = 0.1
    max_aspect: float = 100.0

    def __post_init__(self) -> None:
        check_ranges(self, AUGMENT_RANGES, "augmentation setting")

    @classmethod
    def from_dict(cls, values: dict) -> AugmentConfig:
        """Pick this config's keys from a hyperparameter dict (other keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in values.items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------- geometry
def translation(tx: float, ty: float) -> np.ndarray:
    return np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]], np.float64)


def flip_matrix(width: float, height: float, lr: bool, ud: bool) -> np.ndarray:
    """x -> width - x (lr) and y -> height - y (ud)."""
    m = np.eye(3)
    if lr:
        m[0, 0], m[0, 2] = -1.0, width
    if ud:
        m[1, 1], m[1, 2] = -1.0, height
    return m


def random_affine_matrix(
    rng: np.random.Generator,
    src_wh: tuple[float, float],
    dst_wh: tuple[float, float],
    cfg: AugmentConfig,
    *,
    base_scale: float = 1.0,
) -> tuple[np.ndarray, float]:
    """A random affine taking the centre of ``src`` near the centre of ``dst``.

    ``M = T @ Sh @ R @ C``: C moves the source centre to the origin; R rotates by U(-degrees, degrees) and
    scales by ``base_scale * U(1 - scale, 1 + scale)``; Sh shears; T moves the origin to
    ``U(0.5 - translate, 0.5 + translate) * dst`` size.
    Returns:
        ``(M ndarray[3, 3], s)`` with ``s`` the total scale (box areas scale by s**2 without rotation/shear).
    """
    c = translation(-src_wh[0] / 2, -src_wh[1] / 2)
    angle = rng.uniform(-cfg.degrees, cfg.degrees)
    s = base_scale * rng.uniform(1 - cfg.scale, 1 + cfg.scale)
    a = math.radians(angle)
    r = np.array([[s * math.cos(a), s * math.sin(a), 0], [-s * math.sin(a), s * math.cos(a), 0], [0, 0, 1]])
    sh = np.eye(3)
    sh[0, 1] = math.tan(math.radians(rng.uniform(-cfg.shear, cfg.shear)))
    sh[1, 0] = math.tan(math.radians(rng.uniform(-cfg.shear, cfg.shear)))
    t = translation(
        rng.uniform(0.5 - cfg.translate, 0.5 + cfg.translate) * dst_wh[0],
        rng.uniform(0.5 - cfg.translate, 0.5 + cfg.translate) * dst_wh[1],
    )
    return t @ sh @ r @ c, s


def transform_boxes(boxes: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Boxes through an affine matrix: the box enclosing the four transformed corners.

    Args:
        boxes (ndarray[n, 4]): x1, y1, x2, y2.
        m (ndarray[3, 3]): affine matrix (last row 0, 0, 1).
    Returns:
        ndarray[n, 4] float32.
    """
    if not len(boxes):
        return np.zeros((0, 4), np.float32)
    if m[0, 1] == 0 and m[1, 0] == 0:  # axis-aligned (scale, translate, flips): corners map to corners
        xs = boxes[:, [0, 2]] * m[0, 0] + m[0, 2]
        ys = boxes[:, [1, 3]] * m[1, 1] + m[1, 2]
        xs.sort(1)
        ys.sort(1)
        return np.stack([xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]], 1).astype(np.float32)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    xs = np.stack([x1, x2, x2, x1], 1)
    ys = np.stack([y1, y1, y2, y2], 1)
    tx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    ty = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]
    return np.stack([tx.min(1), ty.min(1), tx.max(1), ty.max(1)], 1).astype(np.float32)


def clip_boxes(boxes: np.ndarray, width: float, height: float) -> np.ndarray:
    """Boxes (ndarray[n, 4] x1, y1, x2, y2) clipped to [0, width] x [0, height] (a copy)."""
    return np.clip(boxes, 0, np.array([width, height, width, height], np.float32))


def box_candidates(before: np.ndarray, after: np.ndarray, cfg: AugmentConfig) -> np.ndarray:
    """Mask of boxes worth keeping: ``before`` are the transformed (unclipped) boxes, ``after`` the clipped ones."""
    w0, h0 = before[:, 2] - before[:, 0], before[:, 3] - before[:, 1]
    w1, h1 = after[:, 2] - after[:, 0], after[:, 3] - after[:, 1]
    eps = 1e-9
    aspect = np.maximum(w1 / (h1 + eps), h1 / (w1 + eps))
    return (
        (w1 > cfg.min_wh)
        & (h1 > cfg.min_wh)
        & (w1 * h1 / (w0 * h0 + eps) > cfg.min_area_ratio)
        & (aspect < cfg.max_aspect)
    )


def warp_image(img: np.ndarray, m: np.ndarray, dst_wh: tuple[int, int]) -> np.ndarray:
    """Warp with a matrix in continuous coordinates (OpenCV samples pixel centres at integer positions).

    Returns:
        ndarray[dst_h, dst_w, 3] uint8, new memory (borders filled with FILL).
    """
    mi = m[:2].copy()
    mi[:, 2] += mi[:, :2] @ np.array([0.5, 0.5]) - 0.5
    return cv2.warpAffine(
        img, mi, dst_wh, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(FILL,) * 3
    )


def apply_affine(
    img: np.ndarray, labels: np.ndarray, m: np.ndarray, dst_wh: tuple[int, int], cfg: AugmentConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Warp an image and its labels by ``m``; boxes are clipped to the output and filtered (``box_candidates``).

    Returns:
        ``(img ndarray[H, W, 3] uint8, labels ndarray[k, 5] float32)``.
    """
    out = warp_image(img, m, dst_wh)
    if not len(labels):
        return out, labels.reshape(0, 5).astype(np.float32)
    moved = transform_boxes(labels[:, 1:5], m)
    clipped = clip_boxes(moved, dst_wh[0], dst_wh[1])
    keep = box_candidates(moved, clipped, cfg)
    return out, np.concatenate([labels[keep, :1], clipped[keep]], 1).astype(np.float32)


# --------------------------------------------------------------------------------------------- mosaic
def mosaic_layout(
    sizes: list[tuple[int, int]], s: int, center: tuple[int, int]
) -> list[tuple[tuple[int, int, int, int], tuple[int, int, int, int]]]:
    """Where each of four tiles goes on a 2s x 2s canvas around ``center`` = (xc, yc).

    Tile 0 ends at the centre (top-left quadrant), 1 top-right, 2 bottom-left, 3 bottom-right; a tile larger
    than its quadrant is cropped at the canvas edge.
    Args:
        sizes: (h, w) of the four tiles.
    Returns:
        per tile ``((x1a, y1a, x2a, y2a) on the canvas, (x1b, y1b, x2b, y2b) in the tile)``.
    """
    xc, yc = center
    big = 2 * s
    out = []
    for k, (h, w) in enumerate(sizes):
        left = k in (0, 2)
        top = k in (0, 1)
        x1a, x2a = (max(xc - w, 0), xc) if left else (xc, min(xc + w, big))
        y1a, y2a = (max(yc - h, 0), yc) if top else (yc, min(yc + h, big))
        x1b = w - (x2a - x1a) if left else 0
        y1b = h - (y2a - y1a) if top else 0
        out.append(((x1a, y1a, x2a, y2a), (x1b, y1b, x1b + (x2a - x1a), y1b + (y2a - y1a))))
    return out


def mosaic4(
    tiles: list[np.ndarray],
    labels: list[np.ndarray],
    s: int,
    center: tuple[int, int],
    canvas: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Four images (long side <= s) into one 2s x 2s canvas.

    Args:
        tiles: four ndarray[h, w, 3] uint8; labels: four ndarray[n, 5] pixel labels of the tiles.
        canvas: optional reusable ndarray[2s, 2s, 3] uint8 buffer (overwritten).
    Returns:
        ``(canvas, labels ndarray[m, 5])``: labels moved onto the canvas, clipped to each tile's visible part;
        boxes with nothing visible are dropped.
    """
    big = 2 * s
    if canvas is None or canvas.shape != (big, big, 3):
        canvas = np.empty((big, big, 3), np.uint8)
    canvas.fill(FILL)
    out = []
    layout = mosaic_layout([t.shape[:2] for t in tiles], s, center)
    for tile, lab, ((x1a, y1a, x2a, y2a), (x1b, y1b, x2b, y2b)) in zip(tiles, labels, layout):
        if x2a <= x1a or y2a <= y1a:
            continue
        canvas[y1a:y2a, x1a:x2a] = tile[y1b:y2b, x1b:x2b]
        if len(lab):
            b = lab[:, 1:5] + np.array([x1a - x1b, y1a - y1b, x1a - x1b, y1a - y1b], np.float32)
            b[:, [0, 2]] = np.clip(b[:, [0, 2]], x1a, x2a)
            b[:, [1, 3]] = np.clip(b[:, [1, 3]], y1a, y2a)
            ok = (b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])
            out.append(np.concatenate([lab[ok, :1], b[ok]], 1))
    lab = np.concatenate(out).astype(np.float32) if out else np.zeros((0, 5), np.float32)
    return canvas, lab


# --------------------------------------------------------------------------------------------- pixels
def hsv_gains(rng: np.random.Generator, cfg: AugmentConfig) -> np.ndarray:
    return rng.uniform(-1, 1, 3) * np.array([cfg.hsv_h, cfg.hsv_s, cfg.hsv_v]) + 1


def augment_hsv(img: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """Scale hue, saturation and value by ``gains`` (hue wraps at 180), in place; returns ``img``.

    A pointwise colour map: equal input pixels give equal output pixels; geometry is untouched.
    """
    if np.allclose(gains, 1.0):
        return img
    x = np.arange(256, dtype=np.float64)
    lut_h = ((x * gains[0]) % 180).astype(np.uint8)
    lut_s = np.clip(x * gains[1], 0, 255).astype(np.uint8)
    lut_v = np.clip(x * gains[2], 0, 255).astype(np.uint8)
    hsv, planes = _hsv_buffers(img.shape)
    cv2.cvtColor(img, cv2.COLOR_BGR2HSV, dst=hsv)
    h, s, v = cv2.split(hsv, planes)  # three 1-channel LUTs beat one 3-channel LUT
    cv2.LUT(h, lut_h, dst=h)
    cv2.LUT(s, lut_s, dst=s)
    cv2.LUT(v, lut_v, dst=v)
    cv2.merge((h, s, v), hsv)
    cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR, dst=img)
    return img


_local = threading.local()


def _hsv_buffers(shape: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per-thread scratch buffers (an HSV image and its three planes), reused while the size stays the same:
    fresh memory costs page faults on every sample."""
    key = shape[:2]
    if getattr(_local, "key", None) != key:
        _local.key = key
        _local.hsv = np.empty((*key, 3), np.uint8)
        _local.planes = [np.empty(key, np.uint8) for _ in range(3)]
    return _local.hsv, _local.planes


def hflip(img: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mirror left-right: pixel column j -> W - 1 - j, box x -> W - x."""
    w = img.shape[1]
    lab = labels.copy()
    lab[:, 1], lab[:, 3] = w - labels[:, 3], w - labels[:, 1]
    return np.ascontiguousarray(img[:, ::-1]), lab


def mixup(
    img1: np.ndarray, labels1: np.ndarray, img2: np.ndarray, labels2: np.ndarray, r: float
) -> tuple[np.ndarray, np.ndarray]:
    """``r * img1 + (1 - r) * img2`` (uint8) with both label sets."""
    img = cv2.addWeighted(img1, r, img2, 1.0 - r, 0.0)
    return img, np.concatenate([labels1, labels2]).astype(np.float32)


def box_ioa(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection of ``box`` (4,) with each of ``boxes`` (n, 4), over the area of each of ``boxes``."""
    iw = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    ih = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return iw * ih / (area + 1e-9)


def copy_paste(
    img: np.ndarray, labels: np.ndarray, rng: np.random.Generator, p: float, max_ioa: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Box-level copy-paste, in place: a share ``p`` of the boxes is copied, mirrored, to the mirrored position
    when that spot overlaps no existing box by more than ``max_ioa`` of its area.

    Returns:
        ``(img, labels ndarray[n + k, 5])``.
    """
    n = len(labels)
    if p <= 0 or n == 0:
        return img, labels
    w = img.shape[1]
    added = []
    current = labels[:, 1:5]
    for j in rng.permutation(n)[: round(p * n)]:
        x1, y1, x2, y2 = (int(round(v)) for v in labels[j, 1:5])
        if x2 - x1 < 1 or y2 - y1 < 1:
            continue
        target = np.array([w - x2, y1, w - x1, y2], np.float32)
        if (box_ioa(target, current) > max_ioa).any():
            continue
        img[y1:y2, w - x2 : w - x1] = img[y1:y2, x1:x2][:, ::-1]
        added.append(np.concatenate([labels[j, :1], target]))
        current = np.concatenate([current, target[None]])
    if not added:
        return img, labels
    return img, np.concatenate([labels, np.array(added, np.float32)]).astype(np.float32)
