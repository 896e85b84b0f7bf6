"""Loader throughput alone (no model): images per second of the training DataLoader, mosaic on by default."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from y9core.data.yaml_config import load_data_yaml

from .augment import AugmentConfig
from .dataset import YoloDataset
from .loader import build_dataloader, shutdown_workers


@dataclass
class LoaderBenchResult:
    """Loader throughput.

    Attributes:
        images_per_s: images per second over the timed batches (after ``warmup`` batches);
        images / batches / seconds: what was timed; setup_s: dataset construction (label scan or cache read,
        image cache build); first_batch_s: from starting the iterator to the first batch (worker start-up);
        dataset_images: images per epoch; cpu_count: logical CPUs of this machine.
    """

    images_per_s: float
    images: int
    batches: int
    seconds: float
    setup_s: float
    first_batch_s: float
    dataset_images: int
    imgsz: int
    batch: int
    workers: int
    cache: str
    mosaic: bool
    cpu_count: int

    def to_dict(self) -> dict:
        return asdict(self)


def bench_loader(
    data: str | Path,
    *,
    split: str = "train",
    imgsz: int = 640,
    batch: int = 64,
    workers: int = 8,
    cache: str | None = "ram",
    mosaic: bool = True,
    batches: int = 30,
    warmup: int = 3,
    repeat: int = 1,
    cache_dir: str | Path | None = None,
    hyp: AugmentConfig | None = None,
    seed: int = 0,
) -> LoaderBenchResult:
    """Time the training loader of ``data`` (a data.yaml) for ``batches`` batches after ``warmup`` batches,
    across epoch boundaries when the split is short (persistent workers, ``set_epoch`` per epoch).

    Args:
        cache: ``"ram"``, ``"disk"`` or ``None``; mosaic: False times the letterbox + affine path.
        repeat: list each image this many times per epoch (e.g. 8 to make 270 images a 2160-image epoch).
    """
    if batches < 1 or warmup < 0 or repeat < 1:
        raise ValueError(f"batches={batches}, warmup={warmup}, repeat={repeat}; expected >= 1, >= 0, >= 1.")
    import torch  # noqa: F401  (imported before the clock starts: the loader needs it, the setup time should not)

    t0 = time.perf_counter()
    cfg = load_data_yaml(data, require=(split,))
    files = cfg.image_files(split) * repeat
    ds = YoloDataset(
        files,
        nc=cfg.nc,
        names=cfg.names,
        imgsz=imgsz,
        augment=True,
        hyp=hyp,
        cache=cache,
        cache_dir=cache_dir,
        seed=seed,
    )
    if not mosaic:
        ds.close_mosaic()
    loader = build_dataloader(ds, batch, workers=workers, drop_last=len(ds) >= batch)
    setup = time.perf_counter() - t0
    seen = timed_images = 0
    epoch = 0
    first_batch = None
    start = None
    t_iter = time.perf_counter()
    while seen < warmup + batches:
        ds.set_epoch(epoch)
        for b in loader:
            if first_batch is None:
                first_batch = time.perf_counter() - t_iter
            seen += 1
            if seen == warmup:
                start = time.perf_counter()
            elif seen > warmup:
                timed_images += b["img"].shape[0]
            if seen >= warmup + batches:
                break
        epoch += 1
    if start is None:  # warmup == 0
        start = t_iter
    seconds = time.perf_counter() - start
    shutdown_workers(loader)  # now, in order: not left to the exit (y9train.data.loader.shutdown_workers)
    return LoaderBenchResult(
        images_per_s=timed_images / seconds,
        images=timed_images,
        batches=batches,
        seconds=seconds,
        setup_s=setup,
        first_batch_s=first_batch or 0.0,
        dataset_images=len(ds),
        imgsz=imgsz,
        batch=batch,
        workers=workers,
        cache=str(cache or "none"),
        mosaic=mosaic,
        cpu_count=os.cpu_count() or 1,
    )
