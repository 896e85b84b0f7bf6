"""Label parsing (file:line errors), unusable images skipped, the label cache (hit, invalidation)."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import y9core.data.labels as labels_mod
from tests.train.data_fixtures import COCO_36, COCO_42, add_image, coco_pair_dataset
from y9core.errors import DataError
from y9train.data import YoloDataset, load_data_yaml, load_labels, parse_label_file


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("0 0.5 0.5 0.2 0.2\n3 0.5 0.5 0.2 0.2\n", r":2 has class 3; expected an integer in 0\.\.2 \(nc=3\)"),
        ("0 0.5 0.5 0.2 0.2\n\n-1 0.5 0.5 0.2 0.2\n", r":3 has class -1; expected"),
        ("1.5 0.5 0.5 0.2 0.2\n", r":1 has class 1\.5; expected an integer"),
        ("0 0.5 0.5 0.2\n", r":1 has 4 columns .*; expected 5: class cx cy w h"),
        ("0 0.5 0.5 0.2 0.2 0.9 0.9\n", r":1 has 7 columns"),
        ("0 0.5 x 0.2 0.2\n", r":1 has a non-number"),
        ("0 1.2 0.5 0.2 0.2\n", r":1 has box 1\.2 0\.5 0\.2 0\.2 reaching outside \[0, 1\]"),
        ("0 0.05 0.5 0.2 0.2\n", r":1 has box .* reaching outside"),  # x1 = -0.05
        ("0 0.5 0.5 -0.2 0.2\n", r":1 has box 0\.5 0\.5 -0\.2 0\.2 with a negative width or height"),
    ],
)
def test_bad_lines_are_reported_as_file_colon_line(tmp_path, text, pattern):
    f = tmp_path / "a.txt"
    f.write_text(text)
    with pytest.raises(DataError, match=pattern) as info:
        parse_label_file(f, nc=3)
    msg = str(info.value)
    assert msg.startswith(f"Label file {f}:") and msg.count(". ") == 0  # one sentence naming file:line


def test_small_overshoot_is_clipped_and_values_kept(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("2 0.5 0.25 0.2 0.1\n1 0.995 0.5 0.02 0.2\n")  # second box reaches x = 1.005 (within 0.01)
    lb = parse_label_file(f, nc=3)
    np.testing.assert_allclose(lb[0], [2, 0.5, 0.25, 0.2, 0.1], atol=1e-7)
    x2 = lb[1, 1] + lb[1, 3] / 2
    assert x2 == pytest.approx(1.0) and lb[1, 1] - lb[1, 3] / 2 == pytest.approx(0.985)


def test_labels_of_a_dataset_with_background_and_error_in_dataset(tmp_path):
    cfg = load_data_yaml(coco_pair_dataset(tmp_path))
    ls = load_labels(cfg.image_files("train"), 80, cache=False)
    assert len(ls.files) == 3 and ls.backgrounds == 1
    assert ls.boxes == 3  # 2 boxes in 000000000036.txt, 1 in 000000000042.txt
    assert tuple(ls.shapes[0]) == (640, 481) and tuple(ls.shapes[1]) == (478, 640)
    (tmp_path / "labels" / "train" / "b.txt").write_text("16 0.6 0.3 0.5 0.5\n80 0.5 0.5 0.1 0.1\n")
    with pytest.raises(
        DataError, match=r"labels/train/b\.txt:2 has class 80; expected an integer in 0\.\.79"
    ):
        load_labels(cfg.image_files("train"), 80, cache=False)


def test_unreadable_and_truncated_images_are_skipped_and_reported(tmp_path, caplog):
    cfg_path = coco_pair_dataset(tmp_path)
    img_dir = tmp_path / "images" / "train"
    (img_dir / "text.jpg").write_text("not an image")
    data = COCO_36.read_bytes()
    (img_dir / "cut.jpg").write_bytes(data[: len(data) // 2])  # OpenCV still decodes half a picture from this
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        ds = YoloDataset.from_yaml(cfg_path, "train", imgsz=160, label_cache=False)
    assert len(ds) == 3  # the run continues without them
    skipped = {p.name: why for p, why in ds.skipped}
    assert skipped == {
        "cut.jpg": "is a JPEG cut short (no end-of-image marker)",
        "text.jpg": "cannot be decoded as an image (its content is not JPEG, PNG, BMP, WebP or TIFF)",
    }
    assert ds.label_issues == []
    assert "cut.jpg" in caplog.text and "text.jpg" in caplog.text
    assert all(p.name not in skipped for p in ds.files)
    ds[0]  # loading still works


def test_no_usable_image_is_an_error(tmp_path):
    bad = tmp_path / "images" / "train" / "x.jpg"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x00" * 10)
    with pytest.raises(DataError, match=r"None of the 1 images could be used .*x\.jpg.*cannot be decoded"):
        load_labels([bad], 3, cache=False)


def test_cache_hit_skips_parsing_and_is_invalidated_by_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("Y9_CACHE_DIR", raising=False)  # the default: the cache goes beside the labels
    cfg = load_data_yaml(coco_pair_dataset(tmp_path))
    files = cfg.image_files("train")
    first = load_labels(files, 80)
    assert not first.from_cache
    assert first.cache_path == tmp_path / "labels" / "train.y9cache.npz"  # beside the labels
    with np.load(first.cache_path, allow_pickle=False) as z:  # no pickles inside
        assert len(z["shapes"]) == 3

    def no_parse(*args, **kwargs):
        raise AssertionError("a cache hit must not parse or decode")

    with monkeypatch.context() as m:
        m.setattr(labels_mod, "parse_label_file", no_parse)
        m.setattr(labels_mod, "verify_images", no_parse)
        second = load_labels(files, 80)
    assert second.from_cache and second.skipped == first.skipped and second.issues == first.issues
    for a, b in zip(first.labels, second.labels):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.shapes, second.shapes)

    lab = tmp_path / "labels" / "train" / "b.txt"
    lab.write_text("3 0.5 0.5 0.25 0.25\n")  # changed content (and size)
    third = load_labels(files, 80)
    assert not third.from_cache and third.labels[1].tolist() == [[3, 0.5, 0.5, 0.25, 0.25]]
    st = lab.stat()
    os.utime(lab, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same content, new mtime
    assert not load_labels(files, 80).from_cache
    assert load_labels(files, 80).from_cache
    add_image(tmp_path, "train", "new.jpg", COCO_42, None)  # a new image: a different file list
    assert not load_labels(cfg.image_files("train"), 80).from_cache


def test_cache_dir_option(tmp_path):
    cfg = load_data_yaml(coco_pair_dataset(tmp_path / "ds"))
    ls = load_labels(cfg.image_files("train"), 80, cache_dir=tmp_path / "cache")
    assert ls.cache_path.is_file() and (tmp_path / "cache") in ls.cache_path.parents
    assert not (tmp_path / "ds" / "labels" / "train.y9cache.npz").exists()


def test_real_dataset_counts_match_its_stats_file(shared, tmp_path):
    root = shared("datasets", "visdrone-tiny")
    stats = json.loads((root / "STATS.json").read_text())
    cfg = load_data_yaml(root / "data.yaml")
    for split in ("train", "val"):
        ls = load_labels(cfg.image_files(split), cfg.nc, cache_dir=tmp_path)
        assert len(ls.files) == stats[split]["images"] and ls.boxes == stats[split]["boxes"]
        counts = np.bincount(np.concatenate(ls.labels)[:, 0].astype(int), minlength=cfg.nc)
        assert {cfg.names[i]: int(c) for i, c in enumerate(counts) if c} == stats[split]["per_class"]
        sizes = {f"{w}x{h}" for h, w in ls.shapes}
        assert sizes == set(stats[split]["image_sizes_top"])


def test_y9_cache_dir_environment_variable_moves_caches(tmp_path, monkeypatch):
    cfg = load_data_yaml(coco_pair_dataset(tmp_path / "ds"))
    monkeypatch.setenv("Y9_CACHE_DIR", str(tmp_path / "env-cache"))
    ls = load_labels(cfg.image_files("train"), 80)
    assert (tmp_path / "env-cache") in ls.cache_path.parents and ls.cache_path.is_file()
    assert not (tmp_path / "ds" / "labels" / "train.y9cache.npz").exists()
    explicit = load_labels(cfg.image_files("train"), 80, cache_dir=tmp_path / "explicit")
    assert (tmp_path / "explicit") in explicit.cache_path.parents  # an explicit cache_dir wins
