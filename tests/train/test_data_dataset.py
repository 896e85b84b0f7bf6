"""Training and validation samples end to end: labels match the drawn boxes after mosaic + affine + flips,
boxes stay in the image, the pipeline flip mirrors, validation labels map back to the source."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from y9train.data import AugmentConfig, SampleKey, YoloDataset, load_data_yaml, load_labels

NO_COLOUR = {"hsv_h": 0.0, "hsv_s": 0.0, "hsv_v": 0.0, "mixup": 0.0, "copy_paste": 0.0}
KEEP_ALL = {"min_wh": 0.0, "min_area_ratio": 0.0, "max_aspect": 1e9}


def drawn_box_dataset(shared, root):
    """Three images the size of real VisDrone frames; each shows its largest real box, filled with 255 in
    channel j (BGR) on black, saved losslessly; its label is that box with class j."""
    cfg = load_data_yaml(shared("datasets", "visdrone-tiny", "data.yaml"))
    ls = load_labels(cfg.image_files("train")[:3], cfg.nc, cache=False)
    (root / "images" / "train").mkdir(parents=True)
    (root / "labels" / "train").mkdir(parents=True)
    files = []
    for j, (lb, (h, w)) in enumerate(zip(ls.labels, ls.shapes)):
        box = lb[np.argmax(lb[:, 3] * lb[:, 4])]
        x1, y1 = round((box[1] - box[3] / 2) * w), round((box[2] - box[4] / 2) * h)
        x2, y2 = round((box[1] + box[3] / 2) * w), round((box[2] + box[4] / 2) * h)
        img = np.zeros((h, w, 3), np.uint8)
        img[y1:y2, x1:x2, j] = 255
        path = root / "images" / "train" / f"{j}.png"
        cv2.imwrite(str(path), img)
        line = (
            f"{j} {(x1 + x2) / 2 / w:.8f} {(y1 + y2) / 2 / h:.8f} {(x2 - x1) / w:.8f} {(y2 - y1) / h:.8f}\n"
        )
        (root / "labels" / "train" / f"{j}.txt").write_text(line)
        files.append(path)
    return files


def rasterise(labels: np.ndarray, cls: int, hw: tuple[int, int]) -> np.ndarray:
    """Pixels whose centre lies inside a box of class ``cls``."""
    out = np.zeros(hw, bool)
    for c, x1, y1, x2, y2 in labels:
        if c == cls:
            out[
                int(np.ceil(y1 - 0.5)) : int(np.ceil(y2 - 0.5)),
                int(np.ceil(x1 - 0.5)) : int(np.ceil(x2 - 0.5)),
            ] = True
    return out


@pytest.mark.parametrize("mosaic", [True, False])
def test_labels_match_the_drawn_boxes_after_augmentation(shared, tmp_path, mosaic):
    files = drawn_box_dataset(shared, tmp_path)
    hyp = AugmentConfig(scale=0.5, translate=0.2, fliplr=0.5, flipud=0.5, **NO_COLOUR, **KEEP_ALL)
    ds = YoloDataset(files, nc=3, imgsz=256, hyp=hyp, cache="ram", label_cache=False, seed=3)
    if not mosaic:
        ds.close_mosaic()
    checked = 0
    for epoch in range(4):
        for index in range(3):
            for size in (256, 192, 320, 250):  # multi-scale sizes (250: odd padding without mosaic)
                s = ds[SampleKey(index, (size, size), epoch, ds.mosaic)]
                img, lab = s["img"], s["labels"]
                assert img.shape == (size, size, 3)
                for c in range(3):
                    mask = img[..., c] > 127
                    drawn = rasterise(lab, c, mask.shape)
                    mine = lab[lab[:, 0] == c]
                    band = sum(
                        2 * (x2 - x1 + y2 - y1) + 4 for _, x1, y1, x2, y2 in mine
                    )  # one pixel around edges
                    assert (mask ^ drawn).sum() <= band, (epoch, index, size, c)
                    if mask.any():
                        assert len(mine), "a visible box lost its label"
                    checked += len(mine)
    assert checked > 30


def test_samples_keep_boxes_inside_with_default_augmentation(shared, tmp_path):
    hyp = AugmentConfig(copy_paste=0.3, mixup=0.5, degrees=5.0)
    ds = YoloDataset.from_yaml(
        shared("datasets", "visdrone-tiny", "data.yaml"),
        "train",
        imgsz=256,
        hyp=hyp,
        cache="ram",
        cache_dir=tmp_path,
    )
    boxes = 0
    for epoch in range(2):
        ds.set_epoch(epoch)
        for i in range(0, len(ds), 3):
            s = ds[i]
            lab = s["labels"]
            assert s["img"].shape == (256, 256, 3) and s["img"].dtype == np.uint8
            assert lab.dtype == np.float32 and lab.shape[1] == 5
            assert (lab[:, 1:] >= 0).all() and (lab[:, 1:] <= 256).all()
            assert ((lab[:, 3] - lab[:, 1]) > hyp.min_wh).all() and (
                (lab[:, 4] - lab[:, 2]) > hyp.min_wh
            ).all()
            assert set(np.unique(lab[:, 0])) <= set(range(10))
            boxes += len(lab)
    assert boxes > 500
    ds.set_epoch(0)
    again = ds[0]
    ds.set_epoch(1)
    assert not np.array_equal(ds[0]["img"], again["img"])  # another epoch, another stream
    ds.set_epoch(0)
    np.testing.assert_array_equal(ds[0]["img"], again["img"])  # reproducible


def test_pipeline_flip_mirrors_image_and_labels(shared, tmp_path):
    data = shared("datasets", "coco8", "data.yaml")
    base = {"mixup": 0.0, "flipud": 0.0}
    plain = YoloDataset.from_yaml(
        data, "train", imgsz=224, hyp=AugmentConfig(fliplr=0.0, **base), cache="ram", cache_dir=tmp_path
    )
    flipped = YoloDataset.from_yaml(
        data, "train", imgsz=224, hyp=AugmentConfig(fliplr=1.0, **base), cache="ram", cache_dir=tmp_path
    )
    for i in range(len(plain)):
        a, b = plain[i], flipped[i]
        diff = np.abs(a["img"][:, ::-1].astype(int) - b["img"].astype(int))
        # The flip is folded into the affine matrix, so OpenCV's fixed-point sampling may round a pixel the other
        # way (by 1, on up to a few % of pixels depending on the CPU's code path); anything more is not a mirror.
        assert (diff > 2).mean() < 1e-3 and diff.mean() < 0.5, (i, diff.mean(), (diff > 2).mean())
        unflipped = np.abs(a["img"].astype(int) - b["img"].astype(int))
        assert unflipped.mean() > 10 * max(diff.mean(), 0.1), (i, unflipped.mean())  # it did flip
        np.testing.assert_allclose(b["labels"][:, 1], 224 - a["labels"][:, 3], atol=1e-3)
        np.testing.assert_allclose(b["labels"][:, 3], 224 - a["labels"][:, 1], atol=1e-3)
        np.testing.assert_allclose(b["labels"][:, [0, 2, 4]], a["labels"][:, [0, 2, 4]], atol=1e-3)


def test_validation_labels_map_back_to_source_boxes(shared, tmp_path):
    ds = YoloDataset.from_yaml(
        shared("datasets", "visdrone-tiny", "data.yaml"), "val", imgsz=320, cache_dir=tmp_path
    )
    assert not ds.augment
    for i in range(len(ds)):
        for shape in ((320, 320), (192, 320), (199, 320)):  # 199: odd padding
            s = ds[SampleKey(i, shape, 0, False)]
            assert s["img"].shape == (*shape, 3)
            (rw, rh), (left, top) = s["ratio_pad"]
            back = s["labels"].copy()
            back[:, [1, 3]] = (back[:, [1, 3]] - left) / rw
            back[:, [2, 4]] = (back[:, [2, 4]] - top) / rh
            np.testing.assert_allclose(back, ds.source_boxes(i), rtol=1e-4, atol=1e-2)
            assert s["orig_hw"] == tuple(ds.shapes[i])
