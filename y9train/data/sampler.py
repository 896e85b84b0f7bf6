"""Batch sampling: order, per-batch output shape (fixed, multi-scale or rectangular) and the epoch/mosaic state.

Every index handed to the dataset is a ``SampleKey`` carrying the epoch and the mosaic flag read from the
main-process dataset when the epoch starts. Persistent DataLoader workers hold their own copy of the dataset,
so ``set_epoch`` / ``close_mosaic`` on the main-process dataset reach them through the keys, and the
augmentation of a sample depends only on ``(seed, epoch, index)``: the same stream for any worker count,
and a resumed run reproduces it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np


class SampleKey(NamedTuple):
    """What a worker needs to build one sample."""

    index: int
    shape: tuple[int, int]  # (h, w) of the network input
    epoch: int
    mosaic: bool
    draw: int = 0  # 1: the sample's second draw in this epoch (a filled last batch), augmented afresh


def rect_shape(hws: np.ndarray, imgsz: int, stride: int, pad: float = 0.0) -> tuple[int, int]:
    """The smallest (h, w), multiples of ``stride``, holding every image of a batch resized to long side ``imgsz``.

    Args:
        hws (ndarray[n, 2]): (h, w) of the source images.
        pad: extra margin in strides before rounding up (0.0: the tightest shape).
    """
    r = imgsz / hws.max(1)
    h = float((hws[:, 0] * r).max())
    w = float((hws[:, 1] * r).max())
    return int(math.ceil(h / stride - 1e-9 + pad) * stride), int(math.ceil(w / stride - 1e-9 + pad) * stride)


class YoloBatchSampler:
    """Yields lists of ``SampleKey`` for one epoch.

    Args:
        dataset: a ``YoloDataset`` (reads ``len``, ``imgsz``, ``seed``, ``epoch``, ``mosaic``, ``shapes``).
        batch_size: images per batch.
        shuffle: a permutation drawn from ``(seed, epoch)`` each epoch.
        drop_last: drop the last incomplete batch.
        multi_scale: a square size per batch drawn from ``(seed, epoch, batch)``: a multiple of ``stride`` within
            ``[scale_range[0] * imgsz, scale_range[1] * imgsz]`` (320..960 for 640).
        seed: the seed of the order and the multi-scale sizes; None: ``dataset.seed`` (which also draws the
            augmentation), so that a run can hold its data order fixed while its augmentation varies, or the reverse.
        rect: batches of similar aspect ratio (images sorted by h / w) with the tightest stride-multiple shape;
            for validation (no shuffle, no multi-scale).
        fill_last: complete the last, smaller batch with the epoch's first images again, each augmented afresh
            (``SampleKey.draw``), so that every batch has one shape: the trainer sets it where the network runs as
            a CUDA graph captured at the full batch (``y9train.optimisation.graphed_network``), whose smaller last batch otherwise
            ran eagerly every epoch and, in the first, autotuned cuDNN for its shape. Not with ``rect``.
    """

    def __init__(
        self,
        dataset,
        batch_size: int,
        *,
        shuffle: bool = True,
        drop_last: bool = False,
        multi_scale: bool = False,
        scale_range: tuple[float, float] = (0.5, 1.5),
        rect: bool = False,
        stride: int = 32,
        pad: float = 0.0,
        seed: int | None = None,
        fill_last: bool = False,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} is not valid; expected a positive integer.")
        if rect and fill_last:
            raise ValueError("rect batches keep each image once; expected fill_last=False for rect=True.")
        if rect and (shuffle or multi_scale):
            raise ValueError(
                "rect batches keep a fixed order and shape; expected shuffle=False, multi_scale=False."
            )
        self.dataset = dataset
        self._seed = None if seed is None else int(seed)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.multi_scale = multi_scale
        self.scale_range = scale_range
        self.rect = rect
        self.stride = stride
        self.pad = pad
        self.fill_last = fill_last

    @property
    def seed(self) -> int:
        """The seed of the order and the multi-scale sizes."""
        return self.dataset.seed if self._seed is None else self._seed

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _order(self, epoch: int) -> np.ndarray:
        n = len(self.dataset)
        if self.rect:
            hw = self.dataset.shapes
            return np.argsort(hw[:, 0] / hw[:, 1], kind="stable")
        if self.shuffle:
            return np.random.default_rng([self.seed, epoch, 0x5EED]).permutation(n)
        return np.arange(n)

    def batch_shape(self, epoch: int, batch: int, members: np.ndarray) -> tuple[int, int]:
        imgsz = self.dataset.imgsz
        if self.rect:
            return rect_shape(self.dataset.shapes[members], imgsz, self.stride, self.pad)
        if self.multi_scale:
            rng = np.random.default_rng([self.seed, epoch, batch, 0x5CA1E])
            lo = max(1, math.ceil(self.scale_range[0] * imgsz / self.stride - 1e-9))
            hi = max(lo, math.floor(self.scale_range[1] * imgsz / self.stride + 1e-9))
            s = int(rng.integers(lo, hi + 1)) * self.stride
            return s, s
        return imgsz, imgsz

    def __iter__(self) -> Iterator[list[SampleKey]]:
        epoch, mosaic = int(self.dataset.epoch), bool(self.dataset.mosaic)
        order = self._order(epoch)
        for b in range(len(self)):
            members = order[b * self.batch_size : (b + 1) * self.batch_size]
            fill = np.resize(order, self.batch_size - len(members)) if self.fill_last else order[:0]
            shape = self.batch_shape(epoch, b, members)
            keys = [SampleKey(int(i), shape, epoch, mosaic) for i in members]
            draws = 1 + np.arange(len(fill)) // max(len(order), 1)  # a set smaller than a batch: draws 1, 2, ...
            yield keys + [SampleKey(int(i), shape, epoch, mosaic, int(d)) for i, d in zip(fill, draws)]
