"""data.yaml parsing and validation, image listing (folders, list files), the label path rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.train.data_fixtures import COCO_36, COCO_42, add_image, coco_pair_dataset, write_yaml
from y9core.errors import DataError
from y9train.data import label_path_for, load_data_yaml


def test_label_path_replaces_the_last_images_component():
    assert label_path_for("/d/images/train/a.jpg") == Path("/d/labels/train/a.txt")
    # only the LAST "images" directory changes; a file called images.jpg is not a directory
    assert label_path_for("/images/x/images/val/images.jpg") == Path("/images/x/labels/val/images.txt")
    assert label_path_for("/d/frames/a.png") == Path("/d/frames/a.txt")


def test_folders_names_dict_and_backgrounds(tmp_path):
    cfg = load_data_yaml(coco_pair_dataset(tmp_path))
    assert cfg.nc == 80 and cfg.names[0] == "class0"  # nc only: generic names
    files = cfg.image_files("train")
    assert [p.name for p in files] == ["a.jpg", "b.jpg", "bg.jpg"]
    assert all(p.is_absolute() for p in files)
    assert not label_path_for(files[2]).exists()  # the background image has no label file


def test_names_list_or_dict_and_nc_agreement(tmp_path):
    coco_pair_dataset(tmp_path)
    write_yaml(tmp_path, nc=2, names={1: "dog", 0: "cat"})
    assert load_data_yaml(tmp_path / "data.yaml").names == ["cat", "dog"]
    write_yaml(tmp_path, nc=2, names=["cat", "dog"])
    assert load_data_yaml(tmp_path / "data.yaml").names == ["cat", "dog"]
    write_yaml(tmp_path, nc=3, names=["cat", "dog"])
    with pytest.raises(DataError, match=r"nc=3 but 2 names"):
        load_data_yaml(tmp_path / "data.yaml")
    write_yaml(tmp_path, nc=3, names={0: "a", 2: "c"})
    with pytest.raises(DataError, match=r"without gaps"):
        load_data_yaml(tmp_path / "data.yaml")


def test_list_files_relative_entries_and_lists_of_sources(tmp_path):
    root = tmp_path / "ds"
    a = add_image(root, "train", "a.jpg", COCO_36, "0 0.5 0.5 0.2 0.2\n")
    b = add_image(root, "extra", "b.jpg", COCO_42, "1 0.5 0.5 0.2 0.2\n")
    (root / "lists").mkdir()
    # relative to the list file's folder; blank lines and comments ignored; duplicates kept
    (root / "lists" / "train.txt").write_text("../images/train/a.jpg\n\n# note\n../images/train/a.jpg\n")
    write_yaml(root, nc=2, train=["lists/train.txt", "images/extra"], val="images/extra")
    files = load_data_yaml(root / "data.yaml", require=("train",)).image_files("train")
    assert files == [a.resolve(), a.resolve(), b.resolve()]


def test_missing_yaml_and_missing_folders_name_the_file(tmp_path):
    with pytest.raises(DataError, match=r"data\.yaml .*nope\.yaml does not exist"):
        load_data_yaml(tmp_path / "nope.yaml")
    coco_pair_dataset(tmp_path)
    write_yaml(tmp_path, val="images/missing")
    with pytest.raises(DataError, match=r"key 'val' points at .*images/missing, which does not exist"):
        load_data_yaml(tmp_path / "data.yaml")
    write_yaml(tmp_path, train=None)
    with pytest.raises(DataError, match=r"has no 'train' entry"):
        load_data_yaml(tmp_path / "data.yaml")
    (tmp_path / "data.yaml").write_text("path: .\nnames:\n  0: a\n train: x\n")
    with pytest.raises(DataError, match=r"data\.yaml:4:2 is not valid YAML: "):
        load_data_yaml(tmp_path / "data.yaml")


def test_list_file_naming_a_missing_image(tmp_path):
    coco_pair_dataset(tmp_path)
    (tmp_path / "train.txt").write_text("images/train/a.jpg\nimages/train/gone.jpg\n")
    write_yaml(tmp_path, train="train.txt")
    cfg = load_data_yaml(tmp_path / "data.yaml")
    with pytest.raises(
        DataError, match=r"List file .*train\.txt names 1 image\(s\) that do not exist.*gone\.jpg \(line 2\)"
    ):
        cfg.image_files("train")


def test_shared_datasets_parse(shared):
    for name, nc in (("coco8", 80), ("visdrone-tiny", 10), ("neu-det-mini", 6)):
        cfg = load_data_yaml(shared("datasets", name, "data.yaml"))
        assert cfg.nc == nc and len(cfg.names) == nc
        assert len(cfg.image_files("train")) > 0 and len(cfg.image_files("val")) > 0
    assert load_data_yaml(shared("datasets", "visdrone-tiny", "data.yaml")).names[9] == "motor"
