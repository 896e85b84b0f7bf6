"""Unwarned oddities (issue 34 "Why"): class names that differ only in case or spaces, a val split equal to (or
sharing images with) train, an orphan label file, an EXIF-turned image, a repeated YAML key: each gets one warning
naming the file, in ``y9 data check`` and at the start of training. The EXIF policy (images read as viewers show
them) holds alike in training, validation and predict."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import cv2
import numpy as np
import yaml
from rich.console import Console

from tests.reliability.hostile_images import jpeg, with_exif_orientation
from tests.train.data_fixtures import COCO_36, add_image, coco_pair_dataset
from tests.train.trainer_fixtures import one_thread, tiny_config  # noqa: F401
from y9core.data.labels import load_labels
from y9core.images.read import decode_image
from y9deploy.runtime.image_file import read_image
from y9train.data import YoloDataset
from y9train.data.check import check_dataset
from y9train.loop.trainer import Trainer
from y9train.reports.reporting import Reporter

NAMES = [f"c{i}" for i in range(80)]
NAMES[5], NAMES[9] = "Car", " car"


def odd_dataset(root: Path) -> tuple[Path, dict[str, Path]]:
    """The coco pair dataset with every oddity: near-duplicate names, val = train, an orphan label, a turned
    image (EXIF orientation 6) and a repeated key; returns data.yaml and the paths the warnings must name."""
    data = coco_pair_dataset(root)
    raw = yaml.safe_load(data.read_text())
    raw.update(val="images/train", names=NAMES)
    raw.pop("nc")
    data.write_text(yaml.safe_dump(raw, sort_keys=False) + "val: images/train\n")
    orphan = root / "labels" / "train" / "gone.txt"
    orphan.write_text("0 0.5 0.5 0.2 0.2\n")
    (root / "labels" / "train" / "classes.txt").write_text(
        "\n".join(NAMES) + "\n"
    )  # a tool's file: not an orphan
    turned = add_image(root, "train", "turned.jpg", COCO_36, "0 0.5 0.5 0.2 0.2\n")
    turned.write_bytes(with_exif_orientation(COCO_36.read_bytes(), 6))
    return data, {"orphan": orphan, "turned": turned}


def expected_warnings(data: Path, paths: dict[str, Path]) -> list[str]:
    return [
        f"data.yaml {data} has class names that differ only in case or spaces: 'Car' (class 5) and ' car' (class 9); "
        "expected one name per class",
        f"data.yaml {data}: the val split is the training split; its scores then measure how well the model "
        "remembers training images",
        f"1 label file(s) have no image: {paths['orphan']}; their boxes are not trained on.",
        f"1 image(s) carry an EXIF orientation: {paths['turned']} (turned 90 degrees clockwise). y9 reads them as "
        "viewers show them (turned)",
    ]


def test_data_check_warns_about_each_oddity(tmp_path, caplog):
    data, paths = odd_dataset(tmp_path)
    with caplog.at_level(logging.WARNING, logger="y9"):
        stats = check_dataset(data, label_cache=False)
    assert len(stats.warnings) == 4
    for got, want in zip(stats.warnings, expected_warnings(data, paths)):
        assert got.startswith(want), got
    assert f"data.yaml {data}:" in caplog.text and "repeats the key 'val' (first on line" in caplog.text


def test_training_warns_about_them_at_its_start(tmp_path):
    data, paths = odd_dataset(tmp_path / "d")
    out = io.StringIO()
    reporter = Reporter(verbose=True, console=Console(file=out, width=1000, force_terminal=False))
    trainer = Trainer(tiny_config(data, tmp_path, imgsz=64), reporter=reporter)
    trainer.setup()
    printed = [line for line in out.getvalue().splitlines() if line.startswith("warning: ")]
    for want in expected_warnings(data, paths):
        assert any(line.startswith(f"warning: {want}") for line in printed), (want, printed)


def test_a_partial_overlap_is_counted(tmp_path):
    data = coco_pair_dataset(tmp_path)
    add_image(tmp_path, "val", "b.jpg", COCO_36, None)
    (tmp_path / "images" / "val" / "b.jpg").unlink()
    raw = yaml.safe_load(data.read_text())
    raw["val"] = ["images/val", "images/train/a.jpg"]
    data.write_text(yaml.safe_dump(raw))
    (warning,) = check_dataset(data, label_cache=False).warnings
    assert (
        f"the val split shares 1 of its 2 images with the training split (e.g. {tmp_path / 'images' / 'train' / 'a.jpg'})"
        in warning
    )


def test_turned_images_are_read_as_shown_in_training_validation_and_predict(tmp_path):
    """The policy: every reader applies the EXIF orientation, so one image has one orientation everywhere."""
    stored = np.zeros((40, 100, 3), np.uint8)
    stored[:, :50] = 255  # white on the left as stored
    path = tmp_path / "images" / "train" / "t.jpg"
    path.parent.mkdir(parents=True)
    path.write_bytes(with_exif_orientation(cv2.imencode(".jpg", stored)[1].tobytes(), 6))
    shown = read_image(path)  # predict and inspect
    assert (
        shown.shape[:2] == (100, 40) and shown[:45].mean() > 200 > shown[55:].mean()
    )  # white on top as shown
    assert np.array_equal(decode_image(path), shown)
    ls = load_labels([path], 1, cache=False)
    assert ls.oriented == [(path, 6)] and ls.shapes.tolist() == [[100, 40]]
    for augment in (False, True):  # the validation letterbox (full decode) and the training decode (reduced)
        ds = YoloDataset([path], nc=1, imgsz=32, augment=augment, label_cache=False)
        img = ds.images.get(0)
        assert img.shape[:2] == (32, 13) and img[:14].mean() > 200 > img[18:].mean()


def test_a_plain_image_carries_no_orientation(tmp_path):
    path = tmp_path / "p.jpg"
    path.write_bytes(jpeg(20, 30))
    assert load_labels([path], 1, cache=False).oriented == []


def test_a_list_naming_one_image_many_times_is_warned_about(tmp_path):
    data = coco_pair_dataset(tmp_path)
    image = tmp_path / "images" / "val" / "c.jpg"
    (tmp_path / "val.txt").write_text(f"{image}\n" * 10_000)
    raw = yaml.safe_load(data.read_text())
    raw["val"] = "val.txt"
    data.write_text(yaml.safe_dump(raw))
    (warning,) = check_dataset(data, label_cache=False).warnings
    assert warning == (
        f"data.yaml {data}: the val split names 10,000 images but only 1 distinct one (1 named more than once: "
        f"{image} (10,000 times)); each repeat is used again. Expected each image once."
    )
