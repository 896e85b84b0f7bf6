"""``y9 predict --save-txt --save-conf --save-crop --save-json`` (issue 35 item 2): over coco8 with the embedded
model, the label files, crops and COCO results read back equal the JSON lines of the same run (boxes to 1e-3 px
after the format conversion)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import TEST_DATA
from tests.deploy.embedded import COCO8, IMGSZ
from y9core.evaluation.coco_categories import COCO91_IDS
from y9deploy.pipelines.predict.results import read_jsonl

PX = 1e-3


@pytest.fixture(scope="module")
def run(embedded_export, tmp_path_factory) -> tuple[Path, list[dict]]:
    from y9cli.app import app

    out = tmp_path_factory.mktemp("predict") / "out"
    res = CliRunner().invoke(app, ["predict", str(TEST_DATA), "--model", str(embedded_export(IMGSZ)), "--save-dir",
                                   str(out), "--save-txt", "--save-conf", "--save-crop", "--save-json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "labels/" in res.output and "crops/" in res.output and "predictions_coco.json" in res.output
    records = read_jsonl(out / "predictions.jsonl")
    assert len(records) == len(COCO8) and sum(len(r["detections"]) for r in records) > len(COCO8)
    return out, records


def boxes(dets: list[dict]) -> np.ndarray:
    return np.array([d["xyxy"] for d in dets], dtype=np.float64).reshape(-1, 4)


def _hw(record: dict) -> tuple[int, int]:
    return cv2.imread(record["source"]).shape[:2]


def test_label_files_are_the_detections_in_yolo_format(run):
    out, records = run
    for r in records:
        h, w = _hw(r)
        text = (out / "labels" / f"{Path(r['source']).stem}.txt").read_text()
        rows = np.array([line.split() for line in text.splitlines()], dtype=np.float64).reshape(-1, 6)
        dets = r["detections"]
        assert len(rows) == len(dets)
        cls, cx, cy, bw, bh, conf = rows.T
        xyxy = np.stack([(cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h], 1)
        np.testing.assert_allclose(xyxy, boxes(dets), atol=PX, rtol=0)
        assert cls.astype(int).tolist() == [d["class_id"] for d in dets]
        np.testing.assert_allclose(conf, [d["confidence"] for d in dets], atol=5e-6, rtol=0)


def test_coco_results_are_the_detections(run):
    out, records = run
    rows = json.loads((out / "predictions_coco.json").read_text())
    assert len(rows) == sum(len(r["detections"]) for r in records)
    by_image: dict = {}
    for row in rows:
        by_image.setdefault(row["image_id"], []).append(row)
    for r in records:
        image_id = int(Path(r["source"]).stem)  # COCO's file names are the image ids
        got, dets = by_image.get(image_id, []), r["detections"]
        assert len(got) == len(dets)
        xyxy = [[x, y, x + bw, y + bh] for x, y, bw, bh in (g["bbox"] for g in got)]
        np.testing.assert_allclose(np.reshape(xyxy, (-1, 4)), boxes(dets), atol=PX, rtol=0)
        # a COCO-80 model: COCO's own category ids (1-90 with gaps), what COCO tools expect (issue 44 item 8)
        assert [g["category_id"] for g in got] == [COCO91_IDS[d["class_id"]] for d in dets]
        np.testing.assert_allclose([g["score"] for g in got], [d["confidence"] for d in dets], atol=1e-6)


def test_crops_hold_each_detections_pixels(run):
    out, records = run
    n_crops = 0
    for r in records:
        frame = cv2.imread(r["source"])
        h, w = frame.shape[:2]
        for k, d in enumerate(r["detections"]):
            x1, y1 = max(0, math.floor(d["xyxy"][0])), max(0, math.floor(d["xyxy"][1]))
            x2, y2 = min(w, math.ceil(d["xyxy"][2])), min(h, math.ceil(d["xyxy"][3]))
            path = out / "crops" / d["class_name"] / f"{Path(r['source']).stem}_{k}.jpg"
            crop = cv2.imread(str(path))
            assert crop is not None, path
            assert crop.shape == (y2 - y1, x2 - x1, 3)
            diff = np.abs(crop.astype(int) - frame[y1:y2, x1:x2].astype(int)).mean()
            assert diff < 8, (path, diff)  # the same pixels, up to JPEG
            n_crops += 1
    assert n_crops == len(list((out / "crops").rglob("*.jpg")))


def test_the_files_need_a_folder_and_save_conf_needs_save_txt(embedded_export):
    from y9deploy.pipelines.predict.files import SaveOptions
    from y9deploy.pipelines.predict.run import predict_source

    with pytest.raises(ValueError, match="--save-conf adds a confidence column"):
        SaveOptions(conf=True)
    with pytest.raises(ValueError, match="need a save_dir"):
        predict_source(COCO8[0], embedded_export(IMGSZ), save=SaveOptions(txt=True))
