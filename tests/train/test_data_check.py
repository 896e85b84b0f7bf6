"""``y9 data check``: counts, class histogram, COCO small/medium/large split in original pixels."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from tests.train.data_fixtures import COCO_36, COCO_42, add_image, write_yaml
from y9cli import data as data_cli
from y9core.errors import DataError
from y9train.data.check import check_dataset


def reference_counts(label_dir, image_sizes, nc):
    """Slow reference: read every label file line by line; sizes in pixels of the original image."""
    classes, split = [0] * nc, {"small": 0, "medium": 0, "large": 0}
    for f in sorted(label_dir.glob("*.txt")):
        w, h = image_sizes[f.stem]
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            c, _, _, bw, bh = (float(v) for v in line.split())
            classes[int(c)] += 1
            area = bw * w * bh * h
            split["small" if area < 32 * 32 else "medium" if area < 96 * 96 else "large"] += 1
    return classes, split


def test_counts_and_size_split_on_boxes_of_known_size(tmp_path):
    # boxes of 31, 33, 95 and 97 pixels square on a 640 x 478 image: small, medium, medium, large
    lines = [f"{k} 0.5 0.5 {s / 640:.8f} {s / 478:.8f}" for k, s in enumerate((31, 33, 95, 97))]
    add_image(tmp_path, "train", "a.jpg", COCO_42, "\n".join(lines) + "\n")
    add_image(tmp_path, "train", "b.jpg", COCO_36, "1 0.5 0.5 0.01 0.01\n")  # 4.8 x 6.4 px on 481 x 640
    add_image(tmp_path, "train", "bg.jpg", COCO_36, None)
    add_image(tmp_path, "train", "empty.jpg", COCO_36, "")  # an empty label file is a background too
    add_image(tmp_path, "val", "c.jpg", COCO_42, "3 0.5 0.5 0.5 0.5\n")
    stats = check_dataset(write_yaml(tmp_path, nc=4), label_cache=False)
    tr = stats.splits["train"]
    assert (tr.images, tr.label_files, tr.backgrounds, tr.boxes) == (4, 3, 2, 5)
    assert tr.class_counts == [1, 2, 1, 1]
    assert (tr.small, tr.medium, tr.large) == (2, 2, 1)
    hist = {(lo, hi): n for lo, hi, n in tr.size_hist}
    assert hist[(0, 8)] == 1 and hist[(16, 32)] == 1 and hist[(32, 64)] == 1 and hist[(64, 96)] == 1
    assert hist[(96, 128)] == 1 and sum(hist.values()) == tr.boxes
    va = stats.splits["val"]
    assert (va.images, va.boxes, va.large) == (1, 1, 1)


def test_real_dataset_matches_a_line_by_line_recount(shared, tmp_path):
    root = shared("datasets", "visdrone-tiny")
    stats = check_dataset(root / "data.yaml", cache_dir=tmp_path)
    recorded = json.loads((root / "STATS.json").read_text())
    import cv2

    for split in ("train", "val"):
        s = stats.splits[split]
        sizes = {p.stem: cv2.imread(str(p)).shape[1::-1] for p in (root / "images" / split).glob("*.jpg")}
        classes, split_counts = reference_counts(root / "labels" / split, sizes, 10)
        assert s.class_counts == classes and s.boxes == recorded[split]["boxes"]
        assert (s.small, s.medium, s.large) == (
            split_counts["small"],
            split_counts["medium"],
            split_counts["large"],
        )
        assert (
            s.images == recorded[split]["images"] and s.backgrounds == recorded[split]["images_without_boxes"]
        )


def test_check_reports_bad_labels(tmp_path):
    add_image(tmp_path, "train", "a.jpg", COCO_42, "0 0.5 0.5 0.1 0.1\n0 0.5 0.5 1.5 0.1\n")
    add_image(tmp_path, "val", "b.jpg", COCO_42, None)
    with pytest.raises(DataError, match=r"labels/train/a\.txt:2 has box .* reaching outside \[0, 1\]"):
        check_dataset(write_yaml(tmp_path, nc=1), label_cache=False)


def test_check_counts_only_kept_boxes_and_lists_dropped_lines(tmp_path):
    add_image(
        tmp_path, "train", "a.jpg", COCO_42, "0 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1 0.1\n1 0.2 0.2 0.0 0.1\n"
    )
    add_image(tmp_path, "val", "b.jpg", COCO_42, None)
    stats = check_dataset(write_yaml(tmp_path, nc=2), label_cache=False)
    train = stats.splits["train"]
    assert train.boxes == 1 and train.class_counts == [1, 0]
    assert train.issue_counts == {"clipped": 0, "zero-size": 1, "duplicate": 1}
    label = tmp_path / "labels" / "train" / "a.txt"
    assert train.issues == [
        f"{label}:2: repeats line 1; dropped",
        f"{label}:3: box 0 x 0.1 has zero size; dropped",
    ]
    # a split without a single box is a warning (the train split would be an error) naming where labels were sought
    assert f"looked for at {tmp_path / 'labels' / 'val' / 'b.txt'}" in stats.splits["val"].layout_warning


def test_cli_prints_tables_and_fails_with_one_sentence(tmp_path):
    app = typer.Typer()
    data_cli.register(app)
    add_image(tmp_path, "train", "a.jpg", COCO_42, "0 0.5 0.5 0.1 0.1\n")
    add_image(tmp_path, "val", "b.jpg", COCO_36, None)
    (tmp_path / "images" / "train" / "broken.jpg").write_text("nope")
    res = CliRunner().invoke(
        app,
        ["data", "check", str(write_yaml(tmp_path, nc=2, names=["cat", "dog"])), "--no-cache"],
        env={"COLUMNS": "160"},
    )
    assert res.exit_code == 0, res.output
    assert "boxes per class" in res.output and "cat" in res.output and "dog" in res.output
    assert "broken.jpg: it cannot be decoded as an image" in res.output
    res = CliRunner().invoke(app, ["data", "check", str(tmp_path / "missing.yaml")])
    assert res.exit_code != 0 and "missing.yaml does not exist" in str(res.exception)
