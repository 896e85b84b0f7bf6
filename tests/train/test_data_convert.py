"""VisDrone-DET -> YOLO conversion on a tiny synthetic VisDrone-format folder built from a real VisDrone frame."""

from __future__ import annotations

import shutil

import cv2
import pytest
import typer
from typer.testing import CliRunner

from y9cli import data as data_cli
from y9core.errors import DataError
from y9train.data import load_data_yaml, load_labels
from y9train.data.convert_visdrone import VISDRONE_NAMES, convert_visdrone

# x,y,w,h,score,category,truncation,occlusion on a 960 x 540 frame
ANNOTATION = """100,200,50,40,1,4,0,0
940,500,40,60,1,1,0,1
10,10,30,30,0,0,0,0
300,300,20,20,1,11,0,0
5,5,10,10,1,10,0,0,
970,10,10,10,1,1,0,0
"""
# hand-computed: car (4 -> 3): cx = 125/960, cy = 220/540, w = 50/960, h = 40/540;
# pedestrian (1 -> 0) clipped to x 940..960, y 500..540; motor (10 -> 9); the rest dropped
EXPECTED = """3 0.130208 0.407407 0.052083 0.074074
0 0.989583 0.962963 0.020833 0.074074
9 0.010417 0.018519 0.010417 0.018519
"""


def visdrone_folder(shared, root):
    frame = sorted(shared("datasets", "visdrone-tiny", "images", "val").glob("*.jpg"))[0]
    assert cv2.imread(str(frame)).shape[:2] == (540, 960)
    for split in ("VisDrone2019-DET-train", "VisDrone2019-DET-val"):
        (root / split / "images").mkdir(parents=True)
        (root / split / "annotations").mkdir()
    train = root / "VisDrone2019-DET-train"
    shutil.copyfile(frame, train / "images" / "0000001_00000_d_0000001.jpg")
    (train / "annotations" / "0000001_00000_d_0000001.txt").write_text(ANNOTATION)
    shutil.copyfile(frame, train / "images" / "0000002_00000_d_0000002.jpg")  # no annotation: background
    val = root / "VisDrone2019-DET-val"
    shutil.copyfile(frame, val / "images" / "0000003_00000_d_0000003.jpg")
    (val / "annotations" / "0000003_00000_d_0000003.txt").write_text("100,200,50,40,1,4,0,0\n")
    return root


def test_convert_matches_hand_computed_lines(shared, tmp_path):
    src = visdrone_folder(shared, tmp_path / "src")
    r = convert_visdrone(src, tmp_path / "dst")
    assert r.images == {"train": 2, "val": 1} and r.boxes == 4
    assert (r.dropped_ignored, r.dropped_others, r.dropped_empty) == (1, 1, 1)
    label = tmp_path / "dst" / "labels" / "train" / "0000001_00000_d_0000001.txt"
    assert label.read_text() == EXPECTED
    assert not (tmp_path / "dst" / "labels" / "train" / "0000002_00000_d_0000002.txt").exists()
    img = tmp_path / "dst" / "images" / "train" / "0000001_00000_d_0000001.jpg"
    assert (
        img.stat().st_ino == (src / "VisDrone2019-DET-train" / "images" / img.name).stat().st_ino
    )  # hard link
    cfg = load_data_yaml(r.data_yaml)
    assert cfg.names == VISDRONE_NAMES and cfg.nc == 10
    ls = load_labels(cfg.image_files("train"), cfg.nc, cache=False)
    assert ls.boxes == 3 and ls.backgrounds == 1


def test_single_split_folder_and_copy_mode(shared, tmp_path):
    src = visdrone_folder(shared, tmp_path / "src") / "VisDrone2019-DET-val"
    r = convert_visdrone(src, tmp_path / "dst", link="copy")
    assert r.images == {"val": 1}
    img = tmp_path / "dst" / "images" / "val" / "0000003_00000_d_0000003.jpg"
    assert img.stat().st_ino != (src / "images" / img.name).stat().st_ino


def test_bad_annotation_lines_name_file_and_line(shared, tmp_path):
    src = visdrone_folder(shared, tmp_path / "src")
    ann = src / "VisDrone2019-DET-train" / "annotations" / "0000001_00000_d_0000001.txt"
    ann.write_text("1,2,3,4,1,4,0,0\n1,2,3,4,1,12,0,0\n")
    with pytest.raises(
        DataError, match=r"0000001_00000_d_0000001\.txt:2 has category 12; expected an integer in 0\.\.11"
    ):
        convert_visdrone(src, tmp_path / "dst")
    ann.write_text("1,2,3\n")
    with pytest.raises(DataError, match=r"\.txt:1 has 3 fields"):
        convert_visdrone(src, tmp_path / "dst")
    with pytest.raises(DataError, match=r"has no images/ and annotations/ folders"):
        convert_visdrone(tmp_path / "dst" / "labels", tmp_path / "dst2")


def test_cli_convert(shared, tmp_path):
    app = typer.Typer()
    data_cli.register(app)
    src = visdrone_folder(shared, tmp_path / "src")
    res = CliRunner().invoke(
        app, ["convert", "visdrone", str(src), str(tmp_path / "dst"), "--link", "symlink"]
    )
    assert res.exit_code == 0, res.output
    assert "train: 2, val: 1 images, 4 boxes; dropped 1 ignored regions, 1 'others', 1 empty" in res.output
    assert (tmp_path / "dst" / "images" / "train" / "0000001_00000_d_0000001.jpg").is_symlink()
    assert (tmp_path / "dst" / "labels" / "train" / "0000001_00000_d_0000001.txt").read_text() == EXPECTED
