"""Hostile datasets and hyperparameters (issue 13, "Why"): each case ends in its documented outcome: one sentence
naming the file and the value (an error), a skip reported by path, or a warning naming the path.

The policy under test is documented in docs/training.md ("Label files") and in the docstrings of
y9train/data/labels.py and y9train/data/image_check.py.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import typer
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.reliability.hostile_images import jpeg_bomb
from tests.train.data_fixtures import COCO_36, COCO_42, add_image, coco_pair_dataset, write_yaml
from tests.train.trainer_fixtures import one_thread, tiny_config  # noqa: F401
from y9cli import data as data_cli
from y9core.data.image_check import CHUNK
from y9core.errors import DataError
from y9train.checkpoints.load import save_checkpoint
from y9train.data import YoloDataset, load_data_yaml, load_labels, parse_label_file
from y9train.data.check import check_dataset
from y9train.loop.trainer import Trainer
from y9train.models import build_model
from y9train.setup.device_model import load_model_for_training

LABEL_36 = (COCO_36.parent / "000000000036.txt").read_text()


def one_sentence(msg: str) -> str:
    assert "\n" not in msg and msg.rstrip().endswith(".") and len(msg) < 600, msg
    return msg


def run_check_cli(data: Path) -> subprocess.CompletedProcess:
    """``y9 data check DATA --no-cache`` as a user runs it (the real entry point, its error handling)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "y9cli", "data", "check", str(data), "--no-cache"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300,
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- label layout
def imgs_layout(root: Path) -> Path:
    """Images under imgs/, labels under labels/ (the layout the label rule does not match)."""
    for split, src in (("train", COCO_36), ("val", COCO_42)):
        add_image(root, split, "a.jpg", src, LABEL_36)
    (root / "images").rename(root / "imgs")
    return write_yaml(root, train="imgs/train", val="imgs/val")


def test_images_folder_without_matching_labels_folder_is_refused_by_check_cli_and_training(tmp_path):
    data = imgs_layout(tmp_path / "d")
    looked_for = tmp_path / "d" / "imgs" / "train" / "a.txt"
    with pytest.raises(DataError) as info:
        check_dataset(data, label_cache=False)
    msg = one_sentence(str(info.value))
    assert f"looked for at {looked_for}, beside it" in msg
    assert f"{tmp_path / 'd' / 'labels'} exists: move the images to {tmp_path / 'd' / 'images'}" in msg

    proc = run_check_cli(data)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.startswith("error: None of the 1 images has a label file")
        and str(looked_for) in proc.stderr
    )

    with pytest.raises(DataError, match="has a label file") as info:  # not a run to "best fitness nan"
        Trainer(tiny_config(data, tmp_path, val=False)).fit()
    assert str(looked_for) in str(info.value)
    assert not (tmp_path / "runs").exists()


def test_train_split_whose_label_files_hold_no_box_is_refused(tmp_path):
    add_image(tmp_path, "train", "a.jpg", COCO_36, "\n")
    add_image(tmp_path, "val", "b.jpg", COCO_42, "0 0.5 0.5 0.2 0.2\n")
    with pytest.raises(
        DataError,
        match=r"1 of the 1 images have label files \(e\.g\. .*labels/train/a\.txt\) but not one box",
    ):
        check_dataset(write_yaml(tmp_path, nc=1), label_cache=False)


def test_val_split_without_labels_warns_with_the_path_looked_for(tmp_path, caplog):
    add_image(tmp_path, "train", "a.jpg", COCO_36, LABEL_36)
    add_image(tmp_path, "val", "b.jpg", COCO_42, "0 0.5 0.5 0.2 0.2\n")
    (tmp_path / "images" / "val").rename(tmp_path / "val_imgs")
    data = write_yaml(tmp_path, val="val_imgs")
    looked_for = tmp_path / "val_imgs" / "b.txt"
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        ds = YoloDataset.from_yaml(data, "val", imgsz=160, label_cache=False)
    assert (
        len(ds) == 1
        and str(looked_for) in caplog.text
        and "None of the 1 images has a label file" in caplog.text
    )
    stats = check_dataset(data, label_cache=False)
    assert (
        stats.splits["train"].layout_warning is None and str(looked_for) in stats.splits["val"].layout_warning
    )
    proc = run_check_cli(data)
    assert proc.returncode == 0 and str(looked_for) in " ".join(proc.stdout.split())


# ----------------------------------------------------------------------------------------- label lines
@pytest.mark.parametrize(
    ("text", "kept", "issues"),
    [
        # zero width / zero height: dropped
        (
            "0 0.5 0.5 0 0.2\n1 0.5 0.5 0.2 0.0\n2 0.5 0.5 0.2 0.2\n",
            [[2, 0.5, 0.5, 0.2, 0.2]],
            [(1, "zero-size"), (2, "zero-size")],
        ),
        # a box inside the tolerance band but outside the image: clipped to zero width, dropped
        ("0 1.004 0.5 0.006 0.2\n", [], [(1, "zero-size")]),
        # repeated lines (also written differently): the first kept, the repeats dropped
        (
            "0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n0 0.50 0.5 0.2 0.2\n\n0 .5 .5 .2 .2\n",
            [[0, 0.5, 0.5, 0.2, 0.2], [1, 0.5, 0.5, 0.2, 0.2]],
            [(3, "duplicate"), (5, "duplicate")],
        ),
        # an overshoot within the tolerance: clipped and reported
        ("0 0.995 0.5 0.02 0.2\n", [[0, 0.9925, 0.5, 0.015, 0.2]], [(1, "clipped")]),
        # a float-rounding overshoot is clipped silently
        ("0 0.9 0.5 0.2000001 0.2\n", [[0, 0.9, 0.5, 0.2, 0.2]], []),
    ],
)
def test_label_line_policy_drop_and_fix_with_file_colon_line(tmp_path, text, kept, issues):
    f = tmp_path / "a.txt"
    f.write_text(text)
    found = []
    lb = parse_label_file(f, nc=3, issues=found)
    np.testing.assert_allclose(lb, np.array(kept, np.float32).reshape(-1, 5), atol=1e-6)
    assert [(i.line, i.kind) for i in found] == issues
    assert all(str(i).startswith(f"{f}:{i.line}: ") for i in found)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("0 0.5 0.5 0.2 -0.1\n", r":1 has box 0\.5 0\.5 0\.2 -0\.1 with a negative width or height"),
        ("0 0.5 0.5 -0.001 0.1\n", r":1 has box .* negative width"),  # within the tolerance, still negative
        ("0 0.5 0.5 0.2 0.2\n0 0.5 1.3 0.2 0.2\n", r":2 has box .* reaching outside \[0, 1\]"),
        ("0 0.5 0.5 1.2 0.2\n", r":1 has box .* reaching outside"),
        ("0 0.5 0.5 0.2 nan\n", r":1 has a non-finite value"),
        ("5 0.5 0.5 0.2 0.2\n", r":1 has class 5; expected an integer in 0\.\.2"),
    ],
)
def test_label_line_policy_errors_name_file_colon_line(tmp_path, text, pattern):
    f = tmp_path / "a.txt"
    f.write_text(text)
    with pytest.raises(DataError, match=pattern) as info:
        parse_label_file(f, nc=3)
    assert one_sentence(str(info.value)).startswith(f"Label file {f}:")


def test_a_folder_where_a_label_file_should_be_is_an_error(tmp_path):
    data = coco_pair_dataset(tmp_path)
    (tmp_path / "labels" / "train" / "a.txt").unlink()
    (tmp_path / "labels" / "train" / "a.txt").mkdir()
    for call in (
        lambda: check_dataset(data, label_cache=False),
        lambda: YoloDataset.from_yaml(data, "train", imgsz=160, label_cache=False),
    ):
        with pytest.raises(DataError, match=r"Label file .*labels/train/a\.txt is a folder") as info:
            call()
        one_sentence(str(info.value))


def test_label_issues_are_counted_logged_cached_and_listed_by_data_check(tmp_path, caplog):
    add_image(tmp_path, "train", "a.jpg", COCO_36, "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n0 0.3 0.3 0 0.1\n")
    add_image(tmp_path, "train", "b.jpg", COCO_42, "0 0.995 0.5 0.02 0.2\n")
    add_image(tmp_path, "val", "c.jpg", COCO_42, "0 0.5 0.5 0.2 0.2\n")
    data = write_yaml(tmp_path, nc=1)
    files = load_data_yaml(data).image_files("train")
    cache_dir = tmp_path / "cache"
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        first = load_labels(files, 1, cache_dir=cache_dir)
    assert not first.from_cache and first.boxes == 2
    assert first.issue_counts() == {"clipped": 1, "zero-size": 1, "duplicate": 1}
    a_txt, b_txt = tmp_path / "labels" / "train" / "a.txt", tmp_path / "labels" / "train" / "b.txt"
    assert [str(i) for i in first.issues] == [
        f"{a_txt}:2: repeats line 1; dropped",
        f"{a_txt}:3: box 0 x 0.1 has zero size; dropped",
        f"{b_txt}:1: box reaches 0.005 outside the image; clipped",
    ]
    assert "in 2 file(s) (1 clipped, 1 zero-size, 1 duplicate)" in caplog.text and f"{a_txt}:2" in caplog.text
    again = load_labels(files, 1, cache_dir=cache_dir)
    assert again.from_cache and again.issues == first.issues  # a cached run reports them too

    proc = run_check_cli(data)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "train: 3 label line(s) fixed or dropped (1 clipped, 1 zero-size, 1 duplicate)" in out
    assert f"{a_txt}:3: box 0 x 0.1 has zero size; dropped" in out


# ----------------------------------------------------------------------------------------- list files
def test_gifs_and_non_images_in_list_files_are_skipped_and_reported_with_the_list_file(tmp_path, caplog):
    coco_pair_dataset(tmp_path)
    img = tmp_path / "images" / "train"
    gif = img / "anim.gif"
    assert cv2.imwrite(str(img / "tmp.png"), np.full((20, 20, 3), 90, np.uint8))
    (img / "tmp.png").rename(gif)  # a real picture: OpenCV 5 would even decode it (as a PNG here)
    (img / "notes.txt").write_text("not an image\n")
    (tmp_path / "train.txt").write_text("images/train/a.jpg\nimages/train/anim.gif\n# comment\nimages/train/notes.txt\n"
                                        "images/train\nimages/train/b.jpg\n")  # fmt: skip
    data = write_yaml(tmp_path, train="train.txt")
    listing = tmp_path / "train.txt"
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        ds = YoloDataset.from_yaml(data, "train", imgsz=160, label_cache=False)
    assert [p.name for p in ds.files] == ["a.jpg", "b.jpg"]
    skipped = {p.name: why for p, why in ds.skipped}
    assert skipped == {
        "anim.gif": f"is a GIF, not a supported image (.bmp, .jpeg, .jpg, .png, .tif, .tiff, .webp) (listed in {listing} line 2)",
        "notes.txt": f"is a .txt file, not a supported image (.bmp, .jpeg, .jpg, .png, .tif, .tiff, .webp) (listed in {listing} line 4)",
        "train": f"is a folder, not an image file (listed in {listing} line 5)",
    }  # fmt: skip
    assert str(gif) in caplog.text and str(listing) in caplog.text
    stats = check_dataset(data, label_cache=False)
    assert {Path(p).name for p, _ in stats.splits["train"].skipped} == set(skipped)
    out = " ".join(run_check_cli(data).stdout.split())
    assert f"skipped {gif}: it is a GIF" in out and f"listed in {listing} line 2" in out


def test_gifs_in_image_folders_are_reported(tmp_path):
    coco_pair_dataset(tmp_path)
    gif = tmp_path / "images" / "train" / "x.gif"
    gif.write_bytes(b"GIF89a")
    ds = YoloDataset.from_yaml(tmp_path / "data.yaml", "train", imgsz=160, label_cache=False)
    assert (gif, f"is a GIF, not a supported image (.bmp, .jpeg, .jpg, .png, .tif, .tiff, .webp) (found in the "
                 f"folder {gif.parent})") in ds.skipped  # fmt: skip
    assert len(ds) == 3


# ----------------------------------------------------------------------------------------- class names
@pytest.mark.parametrize(
    ("names", "pattern"),
    [
        (["cat", ""], r"has an empty name for class 1 \(''\)"),
        (["cat", "  "], r"has an empty name for class 1"),
        ({0: "cat", 1: None}, r"has an empty name for class 1 \(None\)"),
        (["cat", "dog", "cat"], r"names 'cat' twice \(classes 0 and 2\); expected distinct class names"),
        ({0: "a", 1: "b", 2: "b"}, r"names 'b' twice \(classes 1 and 2\)"),
    ],
)
def test_empty_or_duplicate_class_names_are_refused(tmp_path, names, pattern):
    coco_pair_dataset(tmp_path)
    data = tmp_path / "data.yaml"
    raw = yaml.safe_load(data.read_text())
    raw.pop("nc")
    raw["names"] = names
    data.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataError, match=pattern) as info:
        load_data_yaml(data)
    assert str(data) in one_sentence(str(info.value))


def test_fine_tuning_on_other_class_names_warns_with_what_the_checkpoint_had(tmp_path, caplog):
    root = tmp_path / "d"
    add_image(root, "train", "a.jpg", COCO_36, "0 0.5 0.4 0.6 0.6\n1 0.3 0.7 0.2 0.3\n")
    add_image(root, "val", "b.jpg", COCO_42, "1 0.5 0.5 0.4 0.5\n")
    cfg = load_data_yaml(write_yaml(root, nc=2, names=["defect", "scratch"]))
    for names, warned in ((["cat", "scratch"], True), (["defect", "scratch"], False), (None, False)):
        ckpt = tmp_path / f"{names}.pt"
        save_checkpoint(build_model("gelan-t", nc=2, names=names), ckpt)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="y9train"):
            model = load_model_for_training(str(ckpt), cfg, imgsz=160)
        assert model.names == ["defect", "scratch"]
        if not warned:  # same names, or the class0, class1 placeholders of an unnamed model
            assert caplog.text == ""
            continue
        msg = one_sentence(caplog.records[0].getMessage())
        assert str(ckpt) in msg and str(cfg.yaml_path) in msg
        assert "1 of 2 differ: 0: 'cat' -> 'defect'" in msg and "the checkpoint had ['cat', 'scratch']" in msg


# ----------------------------------------------------------------------------------------- images
def corrupt_jpegs(folder: Path) -> dict[str, bytes]:
    """JPEGs that OpenCV decodes partly, with only libjpeg's warning on stderr (each checked to be so)."""
    src = COCO_36.read_bytes()
    scrambled = bytearray(src)
    mid = len(src) // 2
    scrambled[mid : mid + 2000] = bytes((b * 7 + 3) & 0xFF for b in scrambled[mid : mid + 2000])
    return {
        "scrambled.jpg": bytes(scrambled),  # corrupt entropy-coded data in the middle, end marker intact
        "gap.jpg": src[:mid] + src[mid + 5000 :],  # 5 kB cut out of the middle
        "early_eoi.jpg": src[:mid] + b"\xff\xd9",  # the end marker right after half the data
    }


def degenerate_images(folder: Path) -> dict[str, str]:
    """Write the hostile images into ``folder``; returns name -> the start of the reason each is skipped for."""
    folder.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name, data in corrupt_jpegs(folder).items():
        (folder / name).write_bytes(data)
        assert cv2.imread(str(folder / name)) is not None  # the hostile case: OpenCV returns a picture
        expected[name] = "has corrupt JPEG data (libjpeg: 'Corrupt JPEG data: " if name != "early_eoi.jpg" else \
            "has corrupt JPEG data (libjpeg: '"  # fmt: skip
    (folder / "empty.jpg").write_bytes(b"")
    expected["empty.jpg"] = "is an empty (0-byte) file"
    for side in (60000, 30000):  # decompression bombs (issue 34): refused from the header, nothing decoded
        (folder / f"bomb{side}.jpg").write_bytes(jpeg_bomb(side, side))
        expected[f"bomb{side}.jpg"] = f"has {side}x{side} = {side * side:,} pixels, more than the limit"
    for name, (h, w) in {"one.png": (1, 1), "strip.png": (3, 5000), "column.png": (4000, 2)}.items():
        assert cv2.imwrite(str(folder / name), np.full((h, w, 3), 100, np.uint8))
        expected[name] = f"has a degenerate size of {w}x{h} pixels; expected sides of at least 2 pixels"
    return expected


def test_degenerate_and_corrupt_images_are_skipped_and_reported_in_check_and_dataset(tmp_path, capfd, caplog):
    data = coco_pair_dataset(tmp_path)
    expected = degenerate_images(tmp_path / "images" / "train")
    stats = check_dataset(data, label_cache=False)
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="y9train.data"):
        ds = YoloDataset.from_yaml(data, "train", imgsz=160, label_cache=False, cache="ram")
    err = capfd.readouterr().err
    assert "Corrupt JPEG data" not in err  # libjpeg's lines are attributed, not left on stderr
    for skipped in (stats.splits["train"].skipped, [(str(p), why) for p, why in ds.skipped]):
        reasons = {Path(p).name: why for p, why in skipped}
        assert set(reasons) == set(expected)
        for name, start in expected.items():
            assert reasons[name].startswith(start), (name, reasons[name])
    assert all(str(tmp_path / "images" / "train" / n) in caplog.text for n in expected)
    assert stats.splits["train"].images == 3 and len(ds) == 3
    for epoch in range(4):
        ds.set_epoch(epoch)
        for i in range(len(ds)):
            assert ds[i]["img"].shape == (160, 160, 3)


def test_corrupt_jpeg_is_attributed_among_many_images_and_good_jpegs_are_not(tmp_path):
    folder = tmp_path / "images" / "train"
    folder.mkdir(parents=True)
    n = CHUNK + 10
    for i in range(n):  # copies of the two real COCO images: none of them may be blamed
        (folder / f"{i:03d}.jpg").write_bytes((COCO_36 if i % 2 else COCO_42).read_bytes())
    bad = folder / f"{CHUNK + 3:03d}.jpg"  # in the second chunk
    bad.write_bytes(corrupt_jpegs(folder)["gap.jpg"])
    ls = load_labels(sorted(folder.glob("*.jpg")), 80, cache=False, workers=2)
    assert [p for p, _ in ls.skipped] == [bad] and len(ls.files) == n - 1


def test_images_that_pass_data_check_train_without_a_crash(tmp_path):
    data = coco_pair_dataset(tmp_path / "d")
    degenerate_images(tmp_path / "d" / "images" / "train")
    degenerate_images(tmp_path / "d" / "images" / "val")
    check_dataset(data, label_cache=False)  # passes (with skips)
    torch.manual_seed(0)
    result = Trainer(tiny_config(data, tmp_path, epochs=1, hyp={"mosaic": 1.0})).fit()
    assert result.epochs_run == 1 and result.last.is_file()
    assert all(math.isfinite(v) for k, v in result.history[0].items() if k.startswith("train/"))


def test_real_datasets_have_no_skips_and_no_label_issues(shared):
    for name in ("coco8", "neu-det-mini", "deeppcb-mini"):
        stats = check_dataset(shared("datasets", name, "data.yaml"))
        assert stats.warnings == [], name  # no oddity warned on real data (y9core.data.dataset_warnings)
        for s in stats.splits.values():
            assert s.skipped == [] and s.issues == [] and s.layout_warning is None, (name, s.split)


def test_the_check_cli_reports_without_a_traceback(tmp_path):
    """``y9 data check`` in-process: the skip and issue lines come out of the printed report."""
    app = typer.Typer()
    data_cli.register(app)
    data = coco_pair_dataset(tmp_path)
    (tmp_path / "images" / "train" / "empty.jpg").write_bytes(b"")
    res = CliRunner().invoke(app, ["data", "check", str(data), "--no-cache"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert f"skipped {tmp_path / 'images' / 'train' / 'empty.jpg'}: it is an empty (0-byte) file" in " ".join(
        res.output.split()
    )
