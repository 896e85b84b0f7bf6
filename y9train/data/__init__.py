"""YOLO-format data for training: data.yaml, labels (with a cache), an image cache, augmentation, loaders.

Typical use by the trainer::

    from y9train.data import YoloDataset, build_dataloader
    train = YoloDataset.from_yaml("data.yaml", "train", imgsz=640, cache="ram", seed=0)
    loader = build_dataloader(train, batch_size=64, workers=8)
    for epoch in range(start, epochs):
        if epoch == epochs - close_mosaic_epochs:
            train.close_mosaic()
        train.set_epoch(epoch)
        for batch in loader:  # batch["img"] uint8 [B, 3, H, W] RGB, batch["labels"] float32 [N, 6]
            ...
"""

from y9core.data.labels import LabelSet, load_labels, parse_label_file
from y9core.data.paths import label_path_for, list_images
from y9core.data.yaml_config import DataConfig, load_data_yaml

from .augment import AugmentConfig
from .bench import LoaderBenchResult, bench_loader
from .check import DatasetStats, SplitStats, check_dataset
from .convert_visdrone import ConvertResult, convert_visdrone
from .dataset import YoloDataset
from .image_cache import ImageCache
from .loader import build_dataloader, collate
from .sampler import SampleKey, YoloBatchSampler

__all__ = [
    "AugmentConfig",
    "ConvertResult",
    "DataConfig",
    "DatasetStats",
    "ImageCache",
    "LabelSet",
    "LoaderBenchResult",
    "SampleKey",
    "YoloBatchSampler",
    "SplitStats",
    "YoloDataset",
    "bench_loader",
    "build_dataloader",
    "check_dataset",
    "collate",
    "convert_visdrone",
    "label_path_for",
    "list_images",
    "load_data_yaml",
    "load_labels",
    "parse_label_file",
]
