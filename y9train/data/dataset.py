"""The YOLO-format dataset: labels (through the label cache), images (through the image cache), augmentation.

A sample is a dict:
- ``img``: ndarray[H, W, 3] uint8 **BGR** (the collate function turns a batch into RGB CHW);
- ``labels``: ndarray[n, 5] float32 rows ``(class, x1, y1, x2, y2)`` in pixels of ``img``;
- ``path`` (str), ``orig_hw`` ((h, w) of the source image), ``ratio_pad`` (``((rw, rh), (left, top))``: a source
  point ``p`` lands at ``p * (rw, rh) + (left, top)`` in ``img``; left/top are the whole pixels of padding;
  ``((1, 1), (0, 0))`` for augmented samples, whose geometry is random).

Training (``augment=True``): mosaic (probability ``hyp.mosaic``, while ``mosaic`` is on) of four images on a
2s x 2s canvas (s = imgsz), optional copy-paste, then one affine warp (scale, translate, rotation/shear, flips)
to the output size, optional mixup with a second mosaic, HSV. Without mosaic (after ``close_mosaic()``): the
shared letterbox, then the affine. Validation (``augment=False``): the shared letterbox
(``y9core.letterbox.letterbox``, no upscaling beyond ``imgsz``) to the batch shape.
The randomness of a sample comes from ``numpy.random.default_rng([seed, epoch, index])`` only (and its draw, for a
filled last batch: ``SampleKey.draw``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from y9core.data.labels import load_labels, normalised_to_pixels
from y9core.data.yaml_config import DataConfig, load_data_yaml
from y9core.letterbox import letterbox

from .augment import (
    AugmentConfig,
    apply_affine,
    augment_hsv,
    copy_paste,
    flip_matrix,
    hsv_gains,
    mixup,
    mosaic4,
    random_affine_matrix,
)
from .image_cache import ImageCache
from .sampler import SampleKey

IDENTITY_RATIO_PAD = ((1.0, 1.0), (0.0, 0.0))


class YoloDataset:
    """YOLO-format images and labels.

    Args:
        images: image paths (see ``YoloDataset.from_yaml`` for data.yaml input); unusable images are skipped
            and listed in ``skipped``.
        nc: number of classes; names: class names (default ``class0..``).
        imgsz: training/validation size; images are cached with long side ``imgsz``.
        augment: training augmentation on (True) or validation letterbox (False).
        hyp: ``AugmentConfig`` (default values when None).
        cache: image cache ``None`` / ``"ram"`` / ``"disk"`` (see ``image_cache``); ``True`` means ``"ram"``,
            ``False`` and ``"none"`` mean ``None``.
        cache_dir: where label and disk image caches go (default beside the data).
        label_cache: use the label cache.
        seed: base seed of sampling and augmentation.
        workers: threads used while scanning labels and building the image cache.
        require_labels: refuse a set in which no image has a box (``from_yaml`` sets it for the train split).
        skipped: ``(path, reason)`` of entries already left out (e.g. by ``paths.list_images``), reported in
            ``skipped`` with the unusable images.
        log_skipped: log a warning per unusable image (False: the caller reports ``skipped``, as training does).
    """

    def __init__(
        self,
        images: list[str | Path],
        *,
        nc: int,
        names: list[str] | None = None,
        imgsz: int = 640,
        augment: bool = True,
        hyp: AugmentConfig | None = None,
        cache: str | None = None,
        cache_dir: str | Path | None = None,
        label_cache: bool = True,
        seed: int = 0,
        workers: int = 8,
        require_labels: bool = False,
        skipped: list[tuple[Path, str]] | None = None,
        log_skipped: bool = True,
    ):
        if imgsz < 32 or int(imgsz) != imgsz:
            raise ValueError(f"imgsz={imgsz} is not valid; expected an integer >= 32.")
        self.nc = int(nc)
        self.names = list(names) if names is not None else [f"class{i}" for i in range(self.nc)]
        self.imgsz = int(imgsz)
        self.augment = bool(augment)
        self.hyp = hyp or AugmentConfig()
        self.seed = int(seed)
        cache = "ram" if cache is True else None if cache in (False, None, "none", "") else cache
        t0 = time.perf_counter()
        labelset = load_labels(
            [Path(p) for p in images],
            self.nc,
            cache=label_cache,
            cache_dir=cache_dir,
            workers=workers,
            require_labels=require_labels,
            log_skipped=log_skipped,
        )
        self.label_set = labelset
        self.files: list[Path] = labelset.files
        self.labels: list[np.ndarray] = labelset.labels  # normalised (class, cx, cy, w, h)
        self.shapes: np.ndarray = labelset.shapes  # (h, w) of the source images
        self.skipped = [*(skipped or []), *labelset.skipped]  # entries left out of list files / folders first
        self.label_issues = labelset.issues
        t1 = time.perf_counter()
        self.images = ImageCache(
            self.files,
            self.shapes,
            self.imgsz,
            cache,
            cache_dir=cache_dir,
            workers=workers,
            fast_decode=self.augment,
        )
        #: seconds spent building the dataset: ``labels`` (scan or label cache read), ``images`` (image cache fill)
        self.build_seconds = {"labels": t1 - t0, "images": time.perf_counter() - t1}
        self.epoch = 0
        self.mosaic = self.augment and self.hyp.mosaic > 0
        self._canvas: np.ndarray | None = None

    @classmethod
    def from_yaml(
        cls, data: str | Path | DataConfig, split: str = "train", *, augment: bool | None = None, **kwargs
    ):
        """A dataset of one split of a data.yaml (``augment`` defaults to ``split == "train"``; the train split
        must hold at least one box)."""
        cfg = data if isinstance(data, DataConfig) else load_data_yaml(data, require=(split,))
        aug = (split == "train") if augment is None else augment
        left_out: list[tuple[Path, str]] = []
        files = cfg.image_files(split, skipped=left_out)
        kwargs.setdefault("require_labels", split == "train")
        return cls(files, nc=cfg.nc, names=cfg.names, augment=aug, skipped=left_out, **kwargs)

    # --------------------------------------------------------------------------------- trainer hooks
    def set_epoch(self, epoch: int) -> None:
        """Select the augmentation stream of ``epoch`` (call before iterating the loader for that epoch)."""
        self.epoch = int(epoch)

    def close_mosaic(self) -> None:
        """Turn mosaic (and with it mixup and copy-paste) off for the remaining epochs."""
        self.mosaic = False

    def __len__(self) -> int:
        return len(self.files)

    def source_boxes(self, index: int) -> np.ndarray:
        """Ground truth of an image in source pixels: ndarray[n, 5] ``(class, x1, y1, x2, y2)``."""
        h0, w0 = self.shapes[index]
        return normalised_to_pixels(self.labels[index], w0, h0)

    # --------------------------------------------------------------------------------- samples
    def __getitem__(self, key: int | SampleKey) -> dict:
        if not isinstance(key, SampleKey):
            index = int(key)
            if not 0 <= index < len(self):
                raise IndexError(f"index {index} is out of range for a dataset of {len(self)} images.")
            key = SampleKey(index, (self.imgsz, self.imgsz), self.epoch, self.mosaic)
        i = key.index
        sample = {"path": str(self.files[i]), "orig_hw": (int(self.shapes[i][0]), int(self.shapes[i][1]))}
        if self.augment:
            img, labels = self._train_sample(key)
            sample.update(img=img, labels=labels, ratio_pad=IDENTITY_RATIO_PAD)
        else:
            img, labels, ratio_pad = self.letterboxed(i, key.shape, scaleup=False)
            sample.update(img=img, labels=labels, ratio_pad=ratio_pad)
        return sample

    def rng(self, epoch: int, index: int, draw: int = 0) -> np.random.Generator:
        """The generator of sample ``index`` in ``epoch``; ``draw`` > 0: a further draw of it in the same epoch (a
        filled last batch, ``YoloBatchSampler.fill_last``), with its own augmentation."""
        return np.random.default_rng([self.seed, epoch, index] + ([draw] if draw else []))

    def load_resized(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The cached image (long side imgsz, uint8 BGR, treat as read-only) and its pixel labels ndarray[n, 5]."""
        img = self.images.get(index)
        h, w = img.shape[:2]
        return img, normalised_to_pixels(self.labels[index], w, h)

    def letterboxed(
        self, index: int, shape: tuple[int, int], *, scaleup: bool
    ) -> tuple[np.ndarray, np.ndarray, tuple[tuple[float, float], tuple[float, float]]]:
        """The image letterboxed to ``shape`` (h, w) by the shared letterbox, labels and ratio_pad."""
        img = self.images.get(index)
        h0, w0 = self.shapes[index]
        out, (r, _), (dw, dh) = letterbox(img, shape, auto=False, scaleup=scaleup)
        h1, w1 = img.shape[:2]
        uw, uh = int(round(w1 * r)), int(round(h1 * r))
        left, top = float(round(dw - 0.1)), float(round(dh - 0.1))
        labels = normalised_to_pixels(self.labels[index], uw, uh, left, top)
        return out, labels, ((uw / float(w0), uh / float(h0)), (left, top))

    def _mosaic(
        self, index: int, rng: np.random.Generator, dst_wh: tuple[int, int], flip: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        s = self.imgsz
        picks = [index, *(int(j) for j in rng.integers(0, len(self), 3))]
        center = tuple(int(c) for c in rng.uniform(s / 2, 3 * s / 2, 2))
        loaded = [self.load_resized(j) for j in picks]
        if self._canvas is None:
            self._canvas = np.empty((2 * s, 2 * s, 3), np.uint8)
        canvas, labels = mosaic4([t for t, _ in loaded], [lb for _, lb in loaded], s, center, self._canvas)
        if self.hyp.copy_paste > 0:
            canvas, labels = copy_paste(canvas, labels, rng, self.hyp.copy_paste)
        m, _ = random_affine_matrix(rng, (2 * s, 2 * s), dst_wh, self.hyp, base_scale=min(dst_wh) / s)
        return apply_affine(canvas, labels, flip @ m, dst_wh, self.hyp)

    def _train_sample(self, key: SampleKey) -> tuple[np.ndarray, np.ndarray]:
        hyp = self.hyp
        rng = self.rng(key.epoch, key.index, key.draw)
        h, w = key.shape
        use_mosaic = key.mosaic and rng.random() < hyp.mosaic
        lr, ud = rng.random() < hyp.fliplr, rng.random() < hyp.flipud
        flip = flip_matrix(w, h, lr, ud)
        if use_mosaic:
            img, labels = self._mosaic(key.index, rng, (w, h), flip)
            if hyp.mixup > 0 and rng.random() < hyp.mixup:
                img2, labels2 = self._mosaic(int(rng.integers(0, len(self))), rng, (w, h), np.eye(3))
                img, labels = mixup(img, labels, img2, labels2, float(rng.beta(32.0, 32.0)))
        else:
            img, labels, _ = self.letterboxed(key.index, (h, w), scaleup=True)
            m, _ = random_affine_matrix(rng, (w, h), (w, h), hyp)
            img, labels = apply_affine(img, labels, flip @ m, (w, h), hyp)
        augment_hsv(img, hsv_gains(rng, hyp))
        return img, labels
