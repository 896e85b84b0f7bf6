"""``y9.Model.predict`` / ``.track`` (issue 44 item 3): every source ``y9 predict`` takes, results that carry
their origin, ``stream=True`` as frames are done, ``save=True`` the run folder of ``y9 predict``."""

from __future__ import annotations

import json
import os

import cv2
import numpy as np
import pytest

import y9
from tests.conftest import TEST_DATA, y9_output

IMAGES = sorted(TEST_DATA.glob("*.jpg"))


@pytest.fixture(scope="module")
def model():
    with y9.Model(y9.default_model_path()) as m:
        yield m


@pytest.fixture
def video(tmp_path):
    path = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (320, 240))
    for p in IMAGES[:3] * 2:
        writer.write(cv2.resize(cv2.imread(str(p)), (320, 240)))
    writer.release()
    return path


def test_every_kind_of_source_gives_results_naming_their_origin(model, tmp_path, monkeypatch):
    from PIL import Image

    monkeypatch.chdir(tmp_path)
    (tmp_path / "imgs").mkdir()
    for p in IMAGES[:2]:
        (tmp_path / "imgs" / p.name).write_bytes(p.read_bytes())
    (tmp_path / "imgs" / "list.txt").write_text(f"{IMAGES[1].name}\n# a comment\n\n{IMAGES[0].name}\n")  # relative
    ref = [len(r) for r in model.predict([str(p) for p in IMAGES[:2]])]
    by_glob = model.predict("imgs/*.jpg")
    assert [r.path for r in by_glob] == ["imgs/" + p.name for p in IMAGES[:2]] and [len(r) for r in by_glob] == ref
    listed = model.predict("imgs/list.txt")
    assert [os.path.basename(r.path) for r in listed] == [IMAGES[1].name, IMAGES[0].name]
    assert [len(r) for r in listed] == ref[::-1]
    bgr = cv2.imread(str(IMAGES[0]))
    pil = Image.open(IMAGES[0])
    from_pil, from_array = model.predict([pil, bgr])
    assert from_pil.path == "image0" and from_array.path == "image1" and from_pil.orig_shape == bgr.shape[:2]
    assert len(from_pil) == len(from_array) == ref[0]  # PIL's RGB is turned into the BGR the model takes
    with pytest.raises(TypeError, match="mixes in-memory images and paths"):
        model.predict([bgr, str(IMAGES[0])])
    with pytest.raises(TypeError, match="a source is a dict"):
        model.predict({"a": 1})
    with pytest.raises(FileNotFoundError, match=r"list file bad.txt line 1 names nope.jpg, which does not exist"):
        (tmp_path / "bad.txt").write_text("nope.jpg\n")
        model.predict("bad.txt")


def test_a_video_streams_frame_by_frame_and_stops_when_the_loop_does(model, video):
    first = []
    for r in model.predict(video, stream=True, conf=0.3):
        first.append(r)
        if len(first) == 2:
            break  # the worker is told to stop; nothing is left running
    assert [r.frame for r in first] == [0, 1] and first[0].path == str(video)
    everything = model.predict(video)
    assert [r.frame for r in everything] == list(range(6))
    r = everything[0]
    assert r.orig_shape == (240, 320) and r.plot().shape == (240, 320, 3)
    assert not np.array_equal(r.plot(), r.orig_img) and len(r) > 0
    rec = json.loads(r.to_json())
    assert rec["source"] == str(video) and rec["frame"] == 0 and rec["shape"] == [240, 320]
    assert len(rec["detections"]) == len(r)


def test_results_convert_to_coco_with_cocos_category_ids_and_to_supervision(model, tmp_path):
    (r,) = model.predict(str(IMAGES[0]))
    rows = r.to_coco()
    assert rows and rows[0]["image_id"] == int(IMAGES[0].stem)  # 000000000009.jpg -> 9
    from y9core.evaluation.coco_categories import COCO91_IDS

    assert [row["category_id"] for row in rows] == [COCO91_IDS[c] for c in r.detections.class_id]
    assert [row["category_id"] for row in r.to_coco(category_ids=None)] == r.detections.class_id.tolist()
    saved = r.save(tmp_path / "a.jpg")
    assert cv2.imread(str(saved)).shape == r.orig_img.shape
    pytest.importorskip("supervision")
    sv = r.to_supervision()
    assert len(sv) == len(r) and sv.tracker_id is None


def test_save_writes_the_run_folder_y9_predict_writes(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = str(IMAGES[0])
    results = model.predict(source, save=True, save_txt=True, save_json=True)
    assert results[0].save_dir.as_posix() == "runs/predict"
    cli = y9_output("predict", source, "--save-txt", "--save-json")
    assert cli.returncode == 0, cli.stderr
    api_files, cli_files = ([p.relative_to(tmp_path / "runs" / run).as_posix() for p in
                             sorted((tmp_path / "runs" / run).rglob("*")) if p.is_file()]
                            for run in ("predict", "predict2"))  # fmt: skip
    assert api_files == cli_files and "predictions_coco.json" in api_files
    api = json.loads((tmp_path / "runs/predict/predictions_coco.json").read_text())
    cli_rows = json.loads((tmp_path / "runs/predict2/predictions_coco.json").read_text())
    assert [row["category_id"] for row in api] == [row["category_id"] for row in cli_rows]
    with pytest.raises(ValueError, match="expected save=True with them"):
        model.predict(source, save_txt=True)
    with pytest.raises(TypeError, match=r"Model.predict\(\) has no option 'cnf' \(did you mean 'conf'\?\)"):
        model.predict(source, cnf=0.5)
    with pytest.raises(ValueError, match=r"conf=2; expected a number from 0 to 1"):
        model.predict(source, conf=2)
    with pytest.raises(FileNotFoundError):
        model.predict("missing.jpg", save=True)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["predict", "predict2"]  # none left empty


def test_track_gives_ids_on_videos_and_persists_between_frames(model, video):
    tracked = model.track(video)
    assert len(tracked) == 6 and all(r.track_id is not None and len(r.track_id) == len(r) for r in tracked)
    assert any((r.track_id >= 0).any() for r in tracked)
    a, b = (cv2.resize(cv2.imread(str(p)), (320, 240)) for p in IMAGES[:2])
    first = model.track(a, persist=True)[0].track_id
    again = model.track(a, persist=True)[0].track_id
    assert set(again[again >= 0]) == set(first[first >= 0])  # the same objects keep their ids between calls
    after = model.track(b, persist=True)[0].track_id
    fresh = model.track(b)[0].track_id  # without persist: a new tracker, whose first frame starts every track
    assert list(fresh) == list(range(1, len(fresh) + 1)) and list(after) != list(fresh)
    with pytest.raises(ValueError, match="tracker='sort'; expected one of bytetrack, botsort"):
        model.track(video, tracker="sort")
    with pytest.raises(ValueError, match="tracking needs a video"):
        model.track(str(IMAGES[0]))


def test_an_image_behind_a_url(model, tmp_path):
    import http.server
    import shutil
    import threading
    from functools import partial

    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(IMAGES[0], served / "a.jpg")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        (img,) = model.predict(f"{base}/a.jpg")
        assert img.path == f"{base}/a.jpg" and img.frame is None and len(img) == len(model.predict(str(IMAGES[0]))[0])
    finally:
        server.shutdown()
        server.server_close()
