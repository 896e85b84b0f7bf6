"""Batches: the contract (RGB CHW uint8, labels [N, 6]), determinism across worker counts and fresh runs,
set_epoch / close_mosaic reaching persistent workers, multi-scale and rectangular shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.train.data_fixtures import coco_pair_dataset
from y9train.data import AugmentConfig, YoloBatchSampler, YoloDataset, build_dataloader, collate
from y9train.data.sampler import rect_shape


def coco8(shared, tmp_path, **kw):
    kw.setdefault("cache", "ram")
    return YoloDataset.from_yaml(
        shared("datasets", "coco8", "data.yaml"), "train", imgsz=160, cache_dir=tmp_path, **kw
    )


def batches_of(loader, dataset, epoch, mosaic=True):
    if not mosaic:
        dataset.close_mosaic()
    dataset.set_epoch(epoch)
    return [(b["img"].clone(), b["labels"].clone(), list(b["paths"])) for b in loader]


def assert_same(a, b):
    assert len(a) == len(b)
    for (ia, la, pa), (ib, lb, pb) in zip(a, b):
        assert pa == pb
        assert torch.equal(ia, ib)
        assert torch.equal(la, lb)


def test_batch_contract_matches_the_samples(shared, tmp_path):
    ds = coco8(shared, tmp_path)
    loader = build_dataloader(ds, 3, workers=0)
    keys = next(iter(loader.batch_sampler))
    batch = next(iter(loader))
    img, labels = batch["img"], batch["labels"]
    assert img.dtype == torch.uint8 and img.shape == (3, 3, 160, 160) and img.is_contiguous()
    assert labels.dtype == torch.float32 and labels.shape[1] == 6
    assert len(batch["paths"]) == len(batch["orig_hw"]) == len(batch["ratio_pad"]) == 3
    for i, key in enumerate(keys):
        s = ds[key]
        np.testing.assert_array_equal(
            img[i].numpy(), s["img"][:, :, ::-1].transpose(2, 0, 1)
        )  # BGR HWC -> RGB CHW
        rows = labels[labels[:, 0] == i]
        np.testing.assert_array_equal(rows[:, 1:].numpy(), s["labels"])
        assert batch["paths"][i] == s["path"] and batch["orig_hw"][i] == s["orig_hw"]
    assert sorted(set(labels[:, 0].tolist())) == [i for i in range(3) if len(ds[keys[i]]["labels"])]


def test_collate_handles_read_only_images_and_rejects_mixed_shapes():
    a = np.random.default_rng(0).integers(0, 255, (32, 48, 3), dtype=np.uint8)
    ro = a.copy()
    ro.flags.writeable = False
    samples = [
        {"img": a, "labels": np.zeros((0, 5), np.float32), "path": "a", "orig_hw": (1, 1), "ratio_pad": None},
        {"img": ro, "labels": np.ones((2, 5), np.float32), "path": "b", "orig_hw": (1, 1), "ratio_pad": None},
    ]
    b = collate(samples)
    assert torch.equal(b["img"][0], b["img"][1]) and b["labels"][:, 0].tolist() == [1.0, 1.0]
    samples[1]["img"] = a[:16]
    with pytest.raises(ValueError, match=r"Sample b is \(16, 48\) but the batch is \(32, 48\)"):
        collate(samples)


def test_same_stream_for_any_worker_count_fresh_runs_and_persistent_workers(shared, tmp_path):
    hyp = AugmentConfig(mixup=0.5)
    main = coco8(shared, tmp_path, hyp=hyp, seed=5)
    main_loader = build_dataloader(main, 2, workers=0)
    ref = {e: batches_of(main_loader, main, e) for e in (0, 1)}
    ref_closed = batches_of(main_loader, main, 2, mosaic=False)

    workers = coco8(
        shared, tmp_path, hyp=hyp, seed=5
    )  # a fresh run (e.g. a resumed one), two worker processes
    loader = build_dataloader(workers, 2, workers=2, persistent_workers=True)
    assert_same(batches_of(loader, workers, 1), ref[1])  # start at epoch 1, as a resume would
    assert_same(batches_of(loader, workers, 0), ref[0])  # the same persistent workers follow set_epoch
    assert_same(batches_of(loader, workers, 2, mosaic=False), ref_closed)  # ... and close_mosaic
    assert not torch.equal(ref[0][0][0], ref[1][0][0])  # epochs differ
    other_seed = coco8(shared, tmp_path, hyp=hyp, seed=6)
    assert not torch.equal(
        batches_of(build_dataloader(other_seed, 2, workers=0), other_seed, 0)[0][0], ref[0][0][0]
    )


def test_multi_scale_batches(shared, tmp_path):
    ds = coco8(shared, tmp_path, cache=None)
    sampler = YoloBatchSampler(ds, 1, multi_scale=True)
    sizes = set()
    for epoch in range(8):
        ds.set_epoch(epoch)
        for keys in sampler:
            (h, w) = keys[0].shape
            assert h == w and h % 32 == 0 and 80 <= h <= 256  # [0.5, 1.5] x 160, rounded to the stride
            sizes.add(h)
    assert len(sizes) >= 3
    loader = build_dataloader(ds, 2, workers=0, multi_scale=True)
    for keys, batch in zip(loader.batch_sampler, loader):
        assert batch["img"].shape[2:] == keys[0].shape


def test_rect_validation_batches(tmp_path):
    ds = YoloDataset.from_yaml(
        coco_pair_dataset(tmp_path), "train", augment=False, imgsz=320, label_cache=False
    )
    loader = build_dataloader(ds, 1, workers=0)  # rect by default for validation
    shapes = {b["paths"][0].rsplit("/", 1)[-1]: tuple(b["img"].shape[2:]) for b in loader}
    # a.jpg is 481x640 (w x h) -> 240x320 -> (320, 256); b.jpg 640x478 -> 320x239 -> (256, 320)
    assert shapes == {"a.jpg": (320, 256), "b.jpg": (256, 320), "bg.jpg": (256, 320)}
    order = [k.index for keys in loader.batch_sampler for k in keys]
    assert order == [1, 2, 0]  # sorted by h / w: landscape first
    assert rect_shape(np.array([[478, 640], [640, 481]]), 320, 32) == (320, 320)  # one batch holding both


def test_rect_is_refused_for_training(shared, tmp_path):
    with pytest.raises(ValueError, match="rect batches are for validation"):
        build_dataloader(coco8(shared, tmp_path, cache=None), 2, workers=0, rect=True)


def test_no_more_workers_than_batches(tmp_path):
    ds = YoloDataset.from_yaml(coco_pair_dataset(tmp_path), "val", augment=False, imgsz=160, label_cache=False)
    assert build_dataloader(ds, 64, workers=8).num_workers == 1  # one batch: one worker process, not eight
    assert build_dataloader(ds, 64, workers=0).num_workers == 0


def test_a_filled_last_batch_has_the_full_shape_and_fresh_draws(tmp_path):
    ds = YoloDataset.from_yaml(coco_pair_dataset(tmp_path), "train", imgsz=160, label_cache=False)  # 3 images
    plain = YoloBatchSampler(ds, 2)
    filled = YoloBatchSampler(ds, 2, fill_last=True)
    ds.set_epoch(4)
    a, b = list(plain), list(filled)
    assert [len(k) for k in a] == [2, 1] and [len(k) for k in b] == [2, 2]  # same batches, the last completed
    assert a[0] == b[0] and b[1][0] == a[1][0]
    extra = b[1][1]
    assert extra.index == b[0][0].index and extra.draw == 1  # the epoch's first image again, as a second draw
    first = ds[b[0][0]]["img"]
    again = ds[extra]["img"]
    assert first.shape == again.shape and not np.array_equal(first, again)  # augmented afresh, not a copy
    assert np.array_equal(ds[b[0][0]]["img"], first)  # while each draw stays reproducible
    tiny = list(YoloBatchSampler(ds, 8, fill_last=True))  # fewer images than a batch: draws 1, 2 of them
    assert len(tiny) == 1 and len(tiny[0]) == 8
    assert sorted(k.draw for k in tiny[0]) == [0, 0, 0, 1, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="expected fill_last=False for rect=True"):
        YoloBatchSampler(ds, 2, shuffle=False, rect=True, fill_last=True)
