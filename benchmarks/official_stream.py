"""y9's trainer fed train_dual.py's own training batches: a y9 run on the official runs' data stream.

train_dual.py's loader draws its shuffle and augmentation from a constant-seeded generator, so every official run of
one split, batch size and worker count trains on the same batches (``official_order.py``). A y9 run on y9's loader
sees another stream per seed, and the stream alone moves a run's per-epoch figures by about 5 points (docs/
benchmarks.md, session 18). ``OfficialStreamHooks`` replaces y9's training loader with the official's, built as
train_dual.py builds it (``utils.dataloaders.create_dataloader`` of the untouched official source, hyp.scratch-high,
``augment=True``, ``shuffle=True``, the plain DataLoader that a ``close_mosaic`` above 0 selects, the same
workers), and turns
mosaic off at the epoch train_dual.py does (``dataset.mosaic = False`` when ``epoch == epochs - close_mosaic``). Its
batches are converted to y9's batch contract (``(batch_index, class, cx, cy, w, h)`` normalised -> ``(batch_index,
class, x1, y1, x2, y2)`` in pixels; the images are the official's RGB uint8 as they come). Everything else (model,
loss, optimiser, EMA, validation) is y9's. So y9 against the official on one stream compares the trainers without
the data pipelines or the stream's luck between them.

The official's loader iterates exactly once per epoch here, as in train_dual.py (each iteration draws its seeds from
the generator). With ``digests`` the first batches of the first epoch are printed as sha256 over the official's
images and targets, the figure ``official_data_stream.py`` prints for the official's own loader: equal digests,
equal batches. Benchmark code: it imports the official source into the training process (numbers only; nothing of
it goes into y9), and that import sets OpenCV to one thread there, as it does in train_dual.py.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import yaml
from official_order import split_list

from y9train.hooks import TrainHooks


def official_train_loader(
    official_dir: Path, train_list: Path, imgsz: int, batch: int, workers: int, close_mosaic: bool, work: Path
):
    """train_dual.py's training ``(loader, dataset)``, built as train_dual.py builds them: the untouched source's
    ``utils.dataloaders.create_dataloader`` with hyp.scratch-high, ``augment=True``, ``shuffle=True``, stride 32;
    ``close_mosaic`` selects its plain DataLoader (train_dual.py's ``--close-mosaic`` above 0), else its
    InfiniteDataLoader. Puts the official's IPython stub (``reference_env.official_shims(work)``) and its source on
    ``sys.path`` first."""
    from reference_env import official_shims

    for folder in (str(official_shims(work)), str(official_dir)):  # its IPython stub, then its source
        if folder not in sys.path:
            sys.path.insert(0, folder)
    from utils.dataloaders import create_dataloader  # the official source's, untouched

    hyp = yaml.safe_load((Path(official_dir) / "data" / "hyps" / "hyp.scratch-high.yaml").read_text())
    return create_dataloader(
        str(train_list), imgsz, batch, 32, False, hyp=hyp, augment=True, cache=None, rect=False, rank=-1,
        workers=workers, image_weights=False, close_mosaic=close_mosaic, quad=False, prefix="", shuffle=True,
        min_items=0,
    )  # fmt: skip


def batch_digest(imgs, targets, paths) -> str:
    """``"<digest> <names>"`` of an official batch: 16 hex digits of sha256 over its images and targets, then the
    last 24 characters of its first two file names."""
    digest = hashlib.sha256(imgs.numpy().tobytes() + targets.numpy().tobytes()).hexdigest()[:16]
    return f"{digest} {' '.join(Path(p).name[-24:] for p in paths[:2])}"


def y9_labels(targets, shape):
    """The official loader's targets ``(batch_index, class, cx, cy, w, h)``, normalised, of images of ``shape``
    ``(B, C, H, W)`` -> y9's labels ``(batch_index, class, x1, y1, x2, y2)`` in pixels."""
    import torch

    h, w = shape[2:]
    labels = torch.empty_like(targets)
    labels[:, :2] = targets[:, :2]
    centre = targets[:, 2:4] * targets.new_tensor([w, h])
    half = targets[:, 4:6] * targets.new_tensor([w, h]) / 2
    labels[:, 2:4] = centre - half
    labels[:, 4:6] = centre + half
    return labels


class OfficialBatches:
    """The official training loader, yielding y9 batches (``y9train.data.loader``'s contract)."""

    def __init__(self, loader, digests: int = 0, report=print):
        self.loader = loader
        self.digests = digests
        self.report = report
        self.epochs_started = 0

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        first_epoch = self.epochs_started == 0
        self.epochs_started += 1
        for i, (imgs, targets, paths, _) in enumerate(self.loader):
            if first_epoch and i < self.digests:
                self.report(f"official stream, epoch 1 batch {i}: {batch_digest(imgs, targets, paths)}")
            n = imgs.shape[0]
            yield {"img": imgs, "labels": y9_labels(targets, imgs.shape), "paths": list(paths),
                   "orig_hw": [None] * n, "ratio_pad": [None] * n}  # fmt: skip


class OfficialStreamHooks(TrainHooks):
    """Single-process hooks whose training loader is train_dual.py's (see the module docstring)."""

    def __init__(
        self, official_dir: str | Path, data_yaml: str | Path, work: Path, digests: int = 0, report=print
    ):
        self.official_dir = Path(official_dir).resolve()
        self.work = Path(work)
        self.data_yaml = Path(data_yaml)
        self.digests = digests
        self.report = report
        self.official_dataset = None
        self.close_mosaic = 0

    def attach(self, trainer) -> None:
        self.close_mosaic = trainer.config.hyp.close_mosaic
        trainer.add_callback("on_epoch_start", self._close_mosaic)

    def build_train_loader(self, dataset, batch_size: int, *, workers: int, multi_scale: bool, seed: int):
        if multi_scale:
            raise SystemExit("the official data stream has one image size; multi_scale cannot use it.")
        loader, self.official_dataset = official_train_loader(
            self.official_dir, split_list(self.data_yaml), dataset.imgsz, batch_size, workers,
            self.close_mosaic != 0, self.work,
        )  # fmt: skip
        return OfficialBatches(loader, self.digests, self.report)

    def _close_mosaic(self, trainer) -> None:
        n = trainer.config.hyp.close_mosaic
        # train_dual.py's rule, at the start of the epoch
        if n and trainer.epoch == trainer.config.epochs - n:
            self.official_dataset.mosaic = False
            self.report(f"official stream: mosaic off from epoch {trainer.epoch + 1}")
