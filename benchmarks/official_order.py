"""A seeded data order for the untouched official trainer: the split's training images under names that sort by seed.

Why: train_dual.py's training loader takes its shuffle and the seed of every loader worker (which seeds the
``random`` and ``numpy`` draws of mosaic, mixup, affine, HSV and flips) from a generator seeded with a constant
(``utils/dataloaders.py``: ``generator.manual_seed(6148914691236517205 + RANK)``, ``seed_worker``). ``--seed`` sets
only the main process's generators: the weights' initialisation. So official runs of one split, batch size and
worker count all train on the same sequence of augmented batches, whatever their seed
(``benchmarks/official_data_stream.py`` shows it). y9 draws its order and augmentation from its seed. A pool of
official runs is then a sample over initialisations on one data stream, and its mean at any one epoch carries that
stream's luck however many runs it holds.

The official reads its list of training images sorted by path, and finds each label by its image path (the last
``/images/`` -> ``/labels/``, suffix ``.txt``). ``seeded_split`` writes a copy of a ``bench_accuracy.py split``
whose training list names symlinks ``images/train/<key>_<name>`` (and ``labels/train/<key>_<stem>.txt`` beside
them) with ``key`` a digest of ``(seed, name)``: the sorted list is a permutation fixed by the seed, so the same
constant shuffle and worker draws fall on other images. The pixels, labels and evaluation list stay as they are;
nothing of the official code changes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import yaml

from y9core.data.paths import label_path_for


def split_list(data_yaml: Path, key: str = "train") -> Path:
    """The image list file a split's data.yaml names under ``key`` (``bench_accuracy.py split`` writes absolute
    ``path`` and list names relative to it)."""
    cfg = yaml.safe_load(Path(data_yaml).read_text())
    return Path(cfg["path"]) / cfg[key]


def order_key(seed: int, name: str) -> str:
    """12 hex digits of sha256 over ``"{seed}/{name}"``: the prefix that sorts a training image for ``seed``."""
    return hashlib.sha256(f"{seed}/{name}".encode()).hexdigest()[:12]


def seeded_split(data_yaml: Path, out: Path, seed: int) -> Path:
    """Copy the split of ``data_yaml`` (a ``bench_accuracy.py split`` data.yaml) into ``out`` with its training
    images and labels renamed for ``seed`` (symlinks); returns the new data.yaml (its ``val`` is the original
    evaluation list). An image without a label file stays without one (a background image, as before)."""
    cfg = yaml.safe_load(Path(data_yaml).read_text())
    listed = split_list(data_yaml)
    images = [Path(line) for line in listed.read_text().splitlines() if line.strip()]
    names = [p.name for p in images]
    if len(set(names)) != len(names):
        raise SystemExit(
            f"{listed}: two training images share a file name; a seeded order needs unique names."
        )
    img_dir, lbl_dir = out / "images" / "train", out / "labels" / "train"
    img_dir.mkdir(parents=True, exist_ok=True)
    lbl_dir.mkdir(parents=True, exist_ok=True)
    listed = []
    for src in images:
        key = order_key(seed, src.name)
        dst = img_dir / f"{key}_{src.name}"
        _link(dst, src.resolve())
        label = label_path_for(src)
        if label.is_file():
            _link(lbl_dir / f"{key}_{src.stem}.txt", label.resolve())
        listed.append(dst)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text("".join(f"{p}\n" for p in listed))
    seeded = dict(
        cfg, path=str(out.resolve()), train="train.txt", val=str(split_list(data_yaml, "val").resolve())
    )
    (out / "data.yaml").write_text(yaml.safe_dump(seeded, sort_keys=False))
    return out / "data.yaml"


def _link(dst: Path, src: Path) -> None:
    if dst.is_symlink() or dst.exists():
        if dst.resolve() == src:
            return
        raise SystemExit(
            f"{dst} exists and points to {dst.resolve()}; expected {src} (write into a new folder)."
        )
    os.symlink(src, dst)
