"""The data side of a training run's setup: the train and val datasets (label scan or cache, image cache) and their
loaders, each part timed into the run's ``StartupClock`` (``y9train.timing.startup``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from y9core.data.dataset_warnings import dataset_warnings
from y9train.data import AugmentConfig, YoloDataset, build_dataloader
from y9train.setup.seeds import RunSeeds
from y9train.timing.startup import StartupClock


@dataclass(frozen=True)
class RunData:
    """What ``build_run_data`` returns: the datasets and loaders (``val_*`` None without validation; ``val_loader``
    None on a process that does not validate)."""

    train_ds: YoloDataset
    val_ds: YoloDataset | None
    train_loader: Any
    val_loader: Any


def label_cache_state(ds: YoloDataset) -> str:
    """``hit`` (read from the label cache), ``miss`` (scanned, cache written) or ``off`` (scanned, no cache)."""
    if ds.label_set.from_cache:
        return "hit"
    return "miss" if ds.label_set.cache_path is not None else "off"


def build_run_data(config, data_cfg, hooks, *, workers: int, report_skip, clock: StartupClock) -> RunData:
    """Datasets and loaders of ``config`` (a ``TrainConfig``) on ``data_cfg``; ``hooks`` builds the train loader (a
    distributed run shards it); ``report_skip(sentence)`` gets one sentence per skipped image and per dataset
    warning (``y9core.data.dataset_warnings``)."""
    cfg, hyp = config, config.hyp
    seeds = RunSeeds.of(cfg)
    common = {"imgsz": cfg.imgsz, "cache": cfg.cache, "seed": seeds.augment, "workers": max(workers, 1),
              "log_skipped": False}  # each skipped image is reported once, below  # fmt: skip
    aug = AugmentConfig.from_dict(hyp.to_dict())
    train_ds = YoloDataset.from_yaml(data_cfg, "train", hyp=aug, **common)
    clock.lap_split(
        {"train_labels": train_ds.build_seconds["labels"], "train_images": train_ds.build_seconds["images"]}
    )
    clock.fact("train_label_cache", label_cache_state(train_ds))
    clock.fact("image_cache", train_ds.images.mode or "none")
    clock.fact("train_images", len(train_ds))
    val_ds = None
    if cfg.val:
        val_ds = YoloDataset.from_yaml(data_cfg, "val", augment=False, **common)
        clock.lap_split(
            {"val_labels": val_ds.build_seconds["labels"], "val_images": val_ds.build_seconds["images"]}
        )
        clock.fact("val_label_cache", label_cache_state(val_ds))
        clock.fact("val_images", len(val_ds))
    for ds in (train_ds, val_ds):
        for p, why in ds.skipped if ds is not None else []:
            report_skip(f"image {p} is skipped ({why}); the run continues without it.")
    sets = {k: ds.label_set for k, ds in (("train", train_ds), ("val", val_ds)) if ds is not None}
    for text in dataset_warnings(data_cfg, sets):  # near-duplicate names, val = train, orphans, EXIF
        report_skip(text)
    train_loader = hooks.build_train_loader(
        train_ds, cfg.batch, workers=workers, multi_scale=hyp.multi_scale, seed=seeds.order
    )
    val_loader = None
    if val_ds is not None and hooks.is_main:
        val_loader = build_dataloader(val_ds, cfg.val_batch or cfg.batch * 2, workers=workers)
    clock.lap("loaders")
    return RunData(train_ds, val_ds, train_loader, val_loader)
