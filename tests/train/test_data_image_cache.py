"""The image cache: resized as the shared letterbox resizes, same pixels in every mode, disk entries decoded once."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import y9train.data.image_cache as cache_mod
from tests.train.data_fixtures import COCO_36, COCO_42
from y9core.letterbox import letterbox
from y9train.data import SampleKey, YoloDataset
from y9train.data.image_cache import ImageCache, read_resized, resized_hw


def _shapes(files):
    return np.array([cv2.imread(str(p)).shape[:2] for p in files])


@pytest.mark.parametrize("imgsz", [160, 320, 1000])
def test_resized_like_the_letterbox_in_every_mode(tmp_path, imgsz):
    files = [COCO_36, COCO_42, COCO_36]  # a duplicate is cached once
    shapes = _shapes(files)
    caches = {m: ImageCache(files, shapes, imgsz, m, cache_dir=tmp_path) for m in (None, "ram", "disk")}
    for i, p in enumerate(files):
        src = cv2.imread(str(p))
        boxed, (r, _), (dw, dh) = letterbox(src, imgsz)
        h, w = resized_hw(src.shape[:2], imgsz)
        top, left = int(round(dh - 0.1)), int(round(dw - 0.1))
        expected = boxed[top : top + h, left : left + w]  # the letterbox's resized image, without padding
        assert max(h, w) == imgsz
        for mode, cache in caches.items():
            got = cache.get(i)
            assert got.dtype == np.uint8 and got.shape == (h, w, 3), mode
            np.testing.assert_array_equal(got, expected, err_msg=str(mode))
    assert len(list(caches["disk"].folder.glob("*.npy"))) == 2
    assert caches["ram"].nbytes(shapes, files) == sum(
        np.prod(c.get(i).shape) for i, c in [(0, caches["ram"]), (1, caches["ram"])]
    )


def test_disk_cache_decodes_each_image_once_ever(tmp_path, monkeypatch):
    files = [COCO_36, COCO_42]
    shapes = _shapes(files)
    first = ImageCache(files, shapes, 256, "disk", cache_dir=tmp_path)
    stored = {p.name: p.stat().st_mtime_ns for p in first.folder.glob("*.npy")}
    assert len(stored) == 2

    def no_decode(*args, **kwargs):
        raise AssertionError("the disk cache must not decode an image again")

    monkeypatch.setattr(cache_mod, "decode_image", no_decode)
    second = ImageCache(files, shapes, 256, "disk", cache_dir=tmp_path)  # a later run
    for i in range(2):
        img = second.get(i)
        assert isinstance(img, np.memmap) or isinstance(getattr(img, "base", None), np.memmap)
        np.testing.assert_array_equal(img, first.get(i))
    assert {p.name: p.stat().st_mtime_ns for p in second.folder.glob("*.npy")} == stored
    with pytest.raises(AssertionError, match="must not decode"):
        ImageCache(files, shapes, 320, "disk", cache_dir=tmp_path)  # another size is another entry


def test_changed_image_gets_a_new_disk_entry(tmp_path):
    img = tmp_path / "images" / "a.jpg"
    img.parent.mkdir()
    img.write_bytes(COCO_36.read_bytes())
    c1 = ImageCache([img], _shapes([img]), 128, "disk", cache_dir=tmp_path / "c")
    img.write_bytes(COCO_42.read_bytes())
    c2 = ImageCache([img], _shapes([img]), 128, "disk", cache_dir=tmp_path / "c")
    assert c1.get(0).shape != c2.get(0).shape  # 36 is portrait, 42 landscape
    assert len(list(c2.folder.glob("*.npy"))) == 2


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError, match=r"mode 'gpu' is not supported"):
        ImageCache([COCO_36], np.array([[640, 481]]), 160, "gpu")


def test_validation_samples_equal_the_deploy_letterbox_with_any_cache(shared, tmp_path):
    """Val loading through the cache gives exactly the pixels a Detector's letterbox gives the source frame."""
    data = shared("datasets", "visdrone-tiny", "data.yaml")
    for cache in ("ram", "disk"):
        ds = YoloDataset.from_yaml(data, "val", imgsz=320, cache=cache, cache_dir=tmp_path)
        for i, shape in ((0, (320, 320)), (3, (320, 320)), (5, (199, 320)), (6, (181, 320))):  # odd pads too
            s = ds[SampleKey(i, shape, 0, False)]
            expected, (r, _), (dw, dh) = letterbox(cv2.imread(s["path"]), shape)
            np.testing.assert_array_equal(s["img"], expected)
            (rw, rh), (left, top) = s["ratio_pad"]
            assert rw == pytest.approx(r, rel=2e-3) and (left, top) == (round(dw - 0.1), round(dh - 0.1))


@pytest.mark.parametrize(("source", "imgsz"), [(COCO_36, 160), (COCO_42, 300), (COCO_42, 80)])
def test_fast_jpeg_decode_same_size_no_worse_than_the_exact_resize(source, imgsz):
    """Training sets decode JPEGs shrunk >= 2x at 1/2, 1/4 or 1/8 size (libjpeg DCT scaling), then resize:
    the same size as the exact path and at least as close to an area-averaged reference."""
    full = cv2.imread(str(source))
    exact = read_resized(source, imgsz)
    fast = read_resized(source, imgsz, src_hw=full.shape[:2], fast=True)
    assert fast.shape == exact.shape
    area = cv2.resize(full, exact.shape[1::-1], interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(fast - area).mean() <= np.abs(exact - area).mean() + 0.5
    assert not np.array_equal(fast, exact)  # it did take the other path
