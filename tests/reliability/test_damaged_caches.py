"""Damaged caches (issue 34 "Why"): a label cache cut short or with flipped bits, and a disk image-cache entry cut
short or with a damaged header, are rebuilt with a warning naming the file, never a traceback, in ``y9 data check``
and in training (the dataset the trainer builds); the labels and pixels are the ones a fresh scan gives."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tests.reliability.bounded_run import run_y9
from tests.train.data_fixtures import coco_pair_dataset
from y9core.data.labels import load_labels
from y9core.data.yaml_config import load_data_yaml
from y9train.data import YoloDataset


@pytest.fixture
def dataset(tmp_path):
    """A small dataset, its training images, the labels of a fresh scan and the label cache file it wrote."""
    data = coco_pair_dataset(tmp_path / "d")
    files = load_data_yaml(data).image_files("train")
    truth = load_labels(files, 80, cache=False)
    cache = load_labels(files, 80, cache_dir=tmp_path / "cache").cache_path
    assert cache is not None and cache.name.endswith(".y9cache.npz")
    return data, files, truth, cache


def same(a, b) -> bool:
    return (
        a.files == b.files
        and all(np.array_equal(x, y) for x, y in zip(a.labels, b.labels))
        and np.array_equal(a.shapes, b.shapes)
    )


def damaged(cache: Path, how: str, at: int = 0) -> bytes:
    data = bytearray(cache.read_bytes())
    if how == "cut":
        return bytes(data[: len(data) // 2])
    data[at] ^= 0x40
    return bytes(data)


@pytest.mark.parametrize("how", ["cut", "flip"])
def test_a_damaged_label_cache_is_rebuilt_with_a_warning(dataset, tmp_path, caplog, how):
    _, files, truth, cache = dataset
    good = cache.read_bytes()
    positions = [0] if how == "cut" else np.random.default_rng(0).integers(0, len(good), 40).tolist()
    warned = 0
    for at in positions:
        cache.write_bytes(damaged(cache, how, at) if how == "flip" else damaged(cache, "cut"))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="y9train.data"):
            got = load_labels(files, 80, cache_dir=tmp_path / "cache")
        assert same(got, truth), at  # never wrong labels
        if got.from_cache:  # a flip in a byte nothing reads (e.g. a zip header's timestamp): harmless
            continue
        warned += 1
        messages = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
        assert len(messages) == 1 and messages[0].startswith(f"the label cache {cache} is damaged ("), at
        assert messages[0].endswith("; rebuilding it")
        assert load_labels(files, 80, cache_dir=tmp_path / "cache").from_cache  # rebuilt: whole again
        cache.write_bytes(good)
    assert warned >= (1 if how == "cut" else 20)  # most bytes are data, under a CRC-32


def test_data_check_and_the_training_dataset_rebuild_a_damaged_label_cache(dataset, tmp_path, caplog):
    data, _, _, cache = dataset
    cache.write_bytes(damaged(cache, "cut"))
    run = run_y9(["data", "check", str(data)], tmp_path, env={"Y9_CACHE_DIR": str(tmp_path / "cache")})
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert f"the label cache {cache} is damaged (BadZipFile" in " ".join(run.stderr.split())
    cache.write_bytes(damaged(cache, "flip", len(cache.read_bytes()) // 2))
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        ds = YoloDataset.from_yaml(data, "train", imgsz=64, cache_dir=tmp_path / "cache")
    assert f"the label cache {cache} is damaged" in caplog.text and len(ds) == 3
    ds[0]


def test_a_damaged_disk_image_cache_entry_is_rebuilt_or_decoded(dataset, tmp_path, caplog):
    data, _, _, _ = dataset
    kw = dict(imgsz=64, cache="disk", cache_dir=tmp_path / "cache", augment=False)
    first = YoloDataset.from_yaml(data, "train", **kw)
    want = [np.array(first.images.get(i)) for i in range(len(first))]
    entries = sorted(first.images.folder.glob("*.npy"))
    entries[0].write_bytes(entries[0].read_bytes()[:-100])  # cut short
    head = bytearray(entries[1].read_bytes())
    head[head.find(b"(") + 1] = ord("9")  # the shape in the header changed
    entries[1].write_bytes(bytes(head))
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        second = YoloDataset.from_yaml(data, "train", **kw)
    for e in entries[:2]:
        assert f"the image cache entry {e} is damaged" in caplog.text
    assert all(np.array_equal(second.images.get(i), want[i]) for i in range(len(second)))
    third = YoloDataset.from_yaml(data, "train", **kw)
    for e in entries:  # damaged after the build: decoded instead
        e.write_bytes(b"")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        assert all(np.array_equal(third.images.get(i), want[i]) for i in range(len(third)))
    assert caplog.text.count("decoding the image instead") == len(entries)
