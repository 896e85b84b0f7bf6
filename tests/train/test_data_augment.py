"""Geometric invariants of the augmentations on real images and labels (../shared/datasets), each checked against
a slow reference: per-pixel mosaic placement, box masks drawn and transformed, corners transformed point by point.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from y9core.data.labels import normalised_to_pixels
from y9train.data import load_data_yaml, load_labels
from y9train.data.augment import (
    AugmentConfig,
    apply_affine,
    augment_hsv,
    box_ioa,
    copy_paste,
    flip_matrix,
    hflip,
    mixup,
    mosaic4,
    random_affine_matrix,
    transform_boxes,
    warp_image,
)
from y9train.data.image_cache import read_resized

KEEP_ALL = {"min_wh": 0.0, "min_area_ratio": 0.0, "max_aspect": 1e9}


def real_tiles(shared, n=4, s=320, dataset="visdrone-tiny", integer=True):
    """n real images resized to long side s, with their pixel labels (rounded to whole pixels if integer)."""
    cfg = load_data_yaml(shared("datasets", dataset, "data.yaml"))
    ls = load_labels(cfg.image_files("train")[:n], cfg.nc, cache=False)
    tiles, labels = [], []
    for p, lb in zip(ls.files, ls.labels):
        img = read_resized(p, s)
        px = normalised_to_pixels(lb, img.shape[1], img.shape[0])
        if integer:
            px[:, 1:] = np.round(px[:, 1:])
            px = px[(px[:, 3] > px[:, 1]) & (px[:, 4] > px[:, 2])]
        tiles.append(img)
        labels.append(px)
    return tiles, labels


def reference_mosaic_sources(sizes, s, center):
    """Slow reference: for every canvas pixel, (tile, source x, source y) or tile -1, from the quadrant rule
    (tile 0 ends at the centre, 1 starts right of it, 2 below-left, 3 below-right)."""
    xc, yc = center
    big = 2 * s
    tile = np.full((big, big), -1, np.int64)
    sx = np.zeros((big, big), np.int64)
    sy = np.zeros((big, big), np.int64)
    ys, xs = np.mgrid[0:big, 0:big]
    for t, (h, w) in enumerate(sizes):
        ox = xc - w if t in (0, 2) else xc  # where the tile's pixel (0, 0) would land
        oy = yc - h if t in (0, 1) else yc
        inside = (xs >= ox) & (xs < ox + w) & (ys >= oy) & (ys < oy + h)
        quadrant = ((xs < xc) if t in (0, 2) else (xs >= xc)) & ((ys < yc) if t in (0, 1) else (ys >= yc))
        sel = inside & quadrant
        tile[sel], sx[sel], sy[sel] = t, xs[sel] - ox, ys[sel] - oy
    return tile, sx, sy


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("center", [(320, 320), (170, 455), (470, 200), (161, 161), (479, 479)])
def test_mosaic_pixels_and_labels_match_a_per_pixel_reference(shared, center, transpose):
    s = 320
    tiles, labels = real_tiles(shared, s=s)
    if transpose:  # portrait tiles (x <-> y), so that tiles get cropped at the canvas top and bottom too
        tiles = [np.ascontiguousarray(t.transpose(1, 0, 2)) for t in tiles]
        labels = [lb[:, [0, 2, 1, 4, 3]] for lb in labels]
    canvas, out = mosaic4(tiles, labels, s, center)
    tile, sx, sy = reference_mosaic_sources([t.shape[:2] for t in tiles], s, center)
    expected = np.full_like(canvas, 114)
    for t in range(4):
        sel = tile == t
        expected[sel] = tiles[t][sy[sel], sx[sel]]
    np.testing.assert_array_equal(canvas, expected)
    # labels: draw each source box (whole pixels), find where its pixels land, take their bounding box
    want = []
    for t in range(4):
        yy, xx = np.nonzero(tile == t)  # the canvas pixels of tile t, then each box's test on those pixels only
        px, py = sx[yy, xx], sy[yy, xx]
        for lb in labels[t]:
            x1, y1, x2, y2 = lb[1:].astype(int)
            hit = (px >= x1) & (px < x2) & (py >= y1) & (py < y2)
            if hit.any():
                want.append([lb[0], xx[hit].min(), yy[hit].min(), xx[hit].max() + 1, yy[hit].max() + 1])
    np.testing.assert_array_equal(out, np.array(want, np.float32).reshape(-1, 5))


def test_affine_scales_areas_by_s_squared_and_keeps_boxes_inside(shared):
    tiles, labels = real_tiles(shared, n=2, s=320, integer=False)
    cfg = AugmentConfig(scale=0.5, translate=0.2, **KEEP_ALL)
    rng = np.random.default_rng(7)
    for img, lab in zip(tiles, labels):
        h, w = img.shape[:2]
        for _ in range(10):
            m, s = random_affine_matrix(rng, (w, h), (256, 256), cfg)
            out_img, out = apply_affine(img, lab, m, (256, 256), cfg)
            assert out_img.shape == (256, 256, 3) and out_img.dtype == np.uint8
            assert (out[:, 1:] >= 0).all() and (out[:, [1, 3]] <= 256).all() and (out[:, [2, 4]] <= 256).all()
            moved = transform_boxes(lab[:, 1:], m)
            inside = (moved[:, :2] >= 0).all(1) & (moved[:, 2:] <= 256).all(1)
            area_in = (lab[inside, 3] - lab[inside, 1]) * (lab[inside, 4] - lab[inside, 2])
            area_out = (moved[inside, 2] - moved[inside, 0]) * (moved[inside, 3] - moved[inside, 1])
            np.testing.assert_allclose(area_out, area_in * s**2, rtol=1e-4)


def test_transform_boxes_equals_corners_moved_point_by_point():
    rng = np.random.default_rng(3)
    cfg = AugmentConfig(degrees=30, shear=10, scale=0.5, translate=0.2)
    boxes = np.sort(rng.uniform(0, 500, (50, 2, 2)), axis=1).transpose(0, 2, 1).reshape(50, 4)  # x1 y1 x2 y2
    shear_y_only = np.array([[1.0, 0.0, 5.0], [0.3, 1.0, -2.0], [0, 0, 1]])
    shear_x_only = np.array([[1.0, 0.3, 5.0], [0.0, 1.0, -2.0], [0, 0, 1]])
    flip_and_scale = np.array([[-0.5, 0.0, 300.0], [0.0, 2.0, 1.0], [0, 0, 1]])
    matrices = [random_affine_matrix(rng, (500, 400), (320, 320), cfg)[0] for _ in range(5)]
    for m in [*matrices, shear_y_only, shear_x_only, flip_and_scale]:
        got = transform_boxes(boxes, m)
        for b, g in zip(boxes, got):
            pts = []
            for x, y in ((b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])):
                pts.append((m[0, 0] * x + m[0, 1] * y + m[0, 2], m[1, 0] * x + m[1, 1] * y + m[1, 2]))
            xs, ys = zip(*pts)
            np.testing.assert_allclose(g, [min(xs), min(ys), max(xs), max(ys)], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("degrees", [0.0, 25.0])
def test_warped_pixels_follow_the_box_transform(degrees):
    """A filled rectangle warped by the matrix covers exactly the box the matrix gives (within a pixel)."""
    rng = np.random.default_rng(11)
    cfg = AugmentConfig(degrees=degrees, scale=0.6, translate=0.2, shear=5.0 if degrees else 0.0)
    for _ in range(6):
        mask = np.zeros((300, 400, 3), np.uint8)
        x1, y1 = rng.integers(20, 150, 2)
        x2, y2 = x1 + rng.integers(60, 200), y1 + rng.integers(60, 120)
        mask[y1:y2, x1:x2] = 255
        m, _ = random_affine_matrix(rng, (400, 300), (400, 400), cfg)
        out = warp_image(mask, m, (400, 400))
        ys, xs = np.nonzero(out[..., 0] > 127)
        got = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)
        want = np.clip(transform_boxes(np.array([[x1, y1, x2, y2]], np.float32), m)[0], 0, 400)
        np.testing.assert_allclose(got, want, atol=1.0)


def test_warp_uses_pixel_centres_like_resize_and_flip():
    """Matrices act on continuous coordinates: a flip matrix mirrors pixels exactly, a 2x scale equals cv2.resize."""
    img = np.random.default_rng(0).integers(0, 256, (60, 80, 3), dtype=np.uint8)
    np.testing.assert_array_equal(warp_image(img, flip_matrix(80, 60, True, False), (80, 60)), img[:, ::-1])
    np.testing.assert_array_equal(warp_image(img, flip_matrix(80, 60, False, True), (80, 60)), img[::-1])
    up = warp_image(img, np.diag([2.0, 2.0, 1.0]), (160, 120))
    ref = cv2.resize(img, (160, 120), interpolation=cv2.INTER_LINEAR)
    inner = (slice(2, -2), slice(2, -2))  # the border differs: replicate (resize) vs constant fill (warp)
    assert np.abs(up[inner].astype(int) - ref[inner].astype(int)).max() <= 1


def test_hflip_maps_x_to_w_minus_x(shared):
    tiles, labels = real_tiles(shared, n=1, s=320, integer=False)
    img, lab = tiles[0], labels[0]
    out, flipped = hflip(img, lab)
    w = img.shape[1]
    np.testing.assert_array_equal(out[:, ::-1], img)
    np.testing.assert_allclose(flipped[:, 1], w - lab[:, 3])
    np.testing.assert_allclose(flipped[:, 3], w - lab[:, 1])
    np.testing.assert_array_equal(flipped[:, [0, 2, 4]], lab[:, [0, 2, 4]])


def test_hsv_is_a_pointwise_colour_map(shared):
    tiles, _ = real_tiles(shared, n=1, s=256)
    img = tiles[0]
    same = augment_hsv(img.copy(), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(same, img)
    rng = np.random.default_rng(0)
    for _ in range(3):
        gains = rng.uniform(0.5, 1.5, 3)
        out = augment_hsv(img.copy(), gains)
        assert out.shape == img.shape and out.dtype == np.uint8
        # equal input colours -> equal output colours: no pixel moves, no neighbourhood is used
        key = img.reshape(-1, 3).astype(np.int64) @ np.array([1, 256, 65536])
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        np.testing.assert_array_equal(out.reshape(-1, 3), out.reshape(-1, 3)[first][inverse.ravel()])
        # reference: one 3-channel table in HSV space, built entry by entry
        table = np.zeros((256, 1, 3), np.uint8)
        for x in range(256):
            table[x, 0] = (int(x * gains[0]) % 180, min(int(x * gains[1]), 255), min(int(x * gains[2]), 255))
        ref = cv2.cvtColor(cv2.LUT(cv2.cvtColor(img, cv2.COLOR_BGR2HSV), table), cv2.COLOR_HSV2BGR)
        np.testing.assert_array_equal(out, ref)
    # value gain alone scales max(B, G, R) (the V channel) by the gain
    out = augment_hsv(img.copy(), np.array([1.0, 1.0, 0.6]))
    v_in, v_out = img.max(2).astype(float), out.max(2).astype(float)
    assert np.abs(v_out - np.floor(v_in * 0.6)).max() <= 1


def test_mixup_concatenates_labels_and_blends(shared):
    tiles, labels = real_tiles(shared, n=2, s=256)
    a = cv2.resize(tiles[0], (256, 192))
    b = cv2.resize(tiles[1], (256, 192))
    img, lab = mixup(a, labels[0], b, labels[1], 0.3)
    np.testing.assert_array_equal(lab, np.concatenate([labels[0], labels[1]]))
    ref = 0.3 * a.astype(float) + 0.7 * b.astype(float)
    assert np.abs(img.astype(float) - ref).max() <= 1.0


def test_copy_paste_adds_mirrored_patches_without_heavy_overlap(shared):
    tiles, labels = real_tiles(shared, n=1, s=320)
    img, lab = tiles[0].copy(), labels[0]
    out, new = copy_paste(img.copy(), lab, np.random.default_rng(1), p=0.5)
    assert len(new) > len(lab)
    np.testing.assert_array_equal(new[: len(lab)], lab)
    w = img.shape[1]
    for k, row in enumerate(new[len(lab) :]):
        x1, y1, x2, y2 = row[1:].astype(int)
        src = img[y1:y2, w - x2 : w - x1]  # the original patch it mirrors (pixels before pasting)
        assert (box_ioa(row[1:], new[: len(lab) + k, 1:]) <= 0.3).all()
        assert src.shape == out[y1:y2, x1:x2].shape
    last = new[-1, 1:].astype(int)  # the last pasted patch is intact: mirror of its source region
    np.testing.assert_array_equal(
        out[last[1] : last[3], last[0] : last[2]], img[last[1] : last[3], w - last[2] : w - last[0]][:, ::-1]
    )


def test_rotation_matrix_scale_and_angle():
    cfg = AugmentConfig(degrees=45, scale=0.0, translate=0.0)
    m, s = random_affine_matrix(np.random.default_rng(5), (200, 100), (200, 100), cfg)
    assert s == pytest.approx(1.0)
    assert math.hypot(m[0, 0], m[0, 1]) == pytest.approx(1.0)  # a pure rotation keeps lengths
    np.testing.assert_allclose(m @ [100, 50, 1], [100, 50, 1], atol=1e-9)  # the centre stays the centre
