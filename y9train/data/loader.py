"""DataLoader construction and the collate function producing the training batch contract.

A batch (what the trainer and the loss take) is a dict:
- ``img``: uint8 Tensor[B, 3, H, W], RGB, contiguous;
- ``labels``: float32 Tensor[N, 6], rows ``(batch_index, class, x1, y1, x2, y2)`` in pixels of ``img``;
- ``paths``: list[str]; ``orig_hw``: list[(h, w)]; ``ratio_pad``: list[((rw, rh), (left, top))].
"""

from __future__ import annotations

import random
from typing import Any

import cv2
import numpy as np

from .dataset import YoloDataset
from .sampler import YoloBatchSampler


def _empty_uint8(shape: tuple[int, ...]):
    """A uint8 tensor; inside a DataLoader worker it is allocated in shared memory directly (no extra copy
    when the batch is sent to the main process)."""
    import torch
    from torch.utils.data import get_worker_info

    if get_worker_info() is None:
        return torch.empty(shape, dtype=torch.uint8)
    numel = int(np.prod(shape))
    try:
        storage = torch.UntypedStorage._new_shared(numel)
        return torch.empty(0, dtype=torch.uint8).set_(storage, 0, shape)
    except (AttributeError, RuntimeError):  # private API moved: fall back to a copy into shared memory
        return torch.empty(shape, dtype=torch.uint8).share_memory_()


def collate(samples: list[dict]) -> dict:
    """Stack samples (BGR HWC uint8) into the batch contract (RGB CHW uint8); one copy per image."""
    import torch

    h, w = samples[0]["img"].shape[:2]
    for s in samples:
        if s["img"].shape[:2] != (h, w):
            raise ValueError(
                f"Sample {s['path']} is {s['img'].shape[:2]} but the batch is {(h, w)}; expected one shape per batch."
            )
    out = _empty_uint8((len(samples), 3, h, w))
    arr = out.numpy()
    for i, s in enumerate(samples):
        img = s["img"]
        if img.flags.c_contiguous and img.flags.writeable:
            cv2.split(img, [arr[i, 2], arr[i, 1], arr[i, 0]])  # BGR planes straight into RGB slots
        else:
            np.copyto(arr[i], img.transpose(2, 0, 1)[::-1])
    rows = []
    for i, s in enumerate(samples):
        lb = s["labels"]
        if len(lb):
            rows.append(np.concatenate([np.full((len(lb), 1), i, np.float32), lb], 1))
    labels = np.concatenate(rows).astype(np.float32) if rows else np.zeros((0, 6), np.float32)
    return {
        "img": out,
        "labels": torch.from_numpy(labels),
        "paths": [s["path"] for s in samples],
        "orig_hw": [s["orig_hw"] for s in samples],
        "ratio_pad": [s["ratio_pad"] for s in samples],
    }


def worker_init(worker_id: int) -> None:
    """Per worker: OpenCV single-threaded (the workers are the parallelism), numpy/random seeded from the
    worker's torch seed (the augmentation itself draws only from per-sample generators)."""
    import torch

    cv2.setNumThreads(0)
    cv2.ocl.setUseOpenCL(False)
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed)
    random.seed(seed)


def build_dataloader(
    dataset: YoloDataset,
    batch_size: int,
    *,
    workers: int = 8,
    shuffle: bool | None = None,
    multi_scale: bool = False,
    rect: bool | None = None,
    drop_last: bool = False,
    pin_memory: bool | None = None,
    persistent_workers: bool = True,
    prefetch_factor: int = 2,
    stride: int = 32,
    order_seed: int | None = None,
):
    """A torch DataLoader over ``dataset`` yielding batches of the contract above.

    Args:
        batch_size: images per batch.
        workers: worker processes (0: load in the main process).
        shuffle: default ``dataset.augment``.
        multi_scale: a random square size per batch in [0.5, 1.5] x imgsz (multiple of ``stride``).
        rect: rectangular batches sorted by aspect ratio; default ``not dataset.augment`` (validation).
        pin_memory: default True when CUDA is available.
        persistent_workers: keep workers between epochs (``set_epoch`` / ``close_mosaic`` still reach them).
        order_seed: the seed of the order (``YoloBatchSampler``); None: ``dataset.seed``.
    The epoch is taken from ``dataset.epoch`` when iteration starts: call ``dataset.set_epoch(e)`` first.
    """
    import torch

    shuffle = dataset.augment if shuffle is None else shuffle
    rect = (not dataset.augment) if rect is None else rect
    if rect and dataset.augment:
        raise ValueError("rect batches are for validation; expected augment=False for rect=True.")
    sampler = YoloBatchSampler(
        dataset,
        batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        multi_scale=multi_scale,
        rect=rect,
        stride=stride,
        seed=order_seed,
    )
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    return loader_for_sampler(
        dataset,
        sampler,
        workers=workers,
        pin_memory=pin_memory,
        persistent_workers=persistent_workers,
        prefetch_factor=prefetch_factor,
    )


def loader_for_sampler(
    dataset: YoloDataset,
    sampler: Any,
    *,
    workers: int,
    pin_memory: bool,
    persistent_workers: bool = True,
    prefetch_factor: int = 2,
):
    """The DataLoader of ``dataset`` over a batch sampler (``build_dataloader``'s, or one rank's share of it in
    ``y9train.run.distributed``): collate to the batch contract, seeded workers (``worker_init``). At most one worker
    per batch of the sampler (a 30-image validation set in one batch starts one process, not eight; the samples do
    not depend on the worker count: each draws from its own generator)."""
    import torch
    from torch.utils.data import DataLoader

    workers = max(0, min(int(workers), len(sampler)))
    kwargs = {}
    if workers > 0:
        kwargs = {
            "persistent_workers": persistent_workers,
            "prefetch_factor": prefetch_factor,
            "worker_init_fn": worker_init,
            "generator": torch.Generator().manual_seed(dataset.seed),
        }
    return DataLoader(
        dataset,
        batch_sampler=sampler,
        num_workers=workers,
        collate_fn=collate,
        pin_memory=pin_memory,
        **kwargs,
    )


def shutdown_workers(loader: Any) -> bool:
    """Stop the worker processes (and the pin-memory thread) that a DataLoader with ``persistent_workers`` keeps
    between epochs, now and in order; returns whether there were any.

    A persistent loader's iterator lives as long as the loader. Left to the interpreter's exit, its workers are
    joined there one by one, each with a timeout: on a GPU machine with pinned memory 8 workers held the exit 40.7 s,
    the silent tail after a run's last line (issue 48; docs/benchmarks.md; torch issue 81794). torch
    has no public call for it, so this takes the loader's iterator (``_iterator``, the attribute torch itself keeps
    it in, as PyTorch Lightning does at its teardown) and runs the shutdown its ``__del__`` would. Iterating the
    loader again later starts new workers. Nothing for a loader without workers or one never iterated."""
    iterator = getattr(loader, "_iterator", None)
    if iterator is None:
        return False
    loader._iterator = None
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is None:  # single-process iterator: nothing runs beside the main process
        return False
    shutdown()
    return True
