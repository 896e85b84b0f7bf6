"""A YOLO user's first hour as one Python script (issue 44, "Done when" line 1): open a model, stream a video's
results and draw them, predict a ``.txt`` list of images into a run folder, track the video, validate, export.

Run on the coco8 images of ../shared (their data.yaml for ``val``) and a small video made here with
``cv2.VideoWriter``, in a fresh working folder (the run folders land in ``runs/`` there, as for a user), as
``__main__`` in the test's process (``tests.conftest.python_output``)."""

from __future__ import annotations

import json
import shutil
import textwrap

import cv2

from tests.conftest import python_output, shared_path

SCRIPT = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    import numpy as np
    import y9

    model_path, data = sys.argv[1], sys.argv[2]
    report = {}
    m = y9.Model(model_path)

    frames, drawn = [], 0
    for r in m.predict("video.mp4", stream=True):
        annotated = r.plot()
        assert annotated.shape == r.orig_img.shape and annotated is not r.orig_img
        drawn += int(not np.array_equal(annotated, r.orig_img))
        frames.append([r.path, r.frame, list(r.orig_shape), len(r)])
    report["stream"] = {"frames": frames, "drawn": drawn}

    results = m.predict("list.txt", save=True)
    run = results[0].save_dir
    report["list"] = {"paths": [r.path for r in results], "run": str(run),
                      "files": sorted(p.name for p in run.iterdir() if not p.name.startswith(".")),
                      "counts": [len(r) for r in results], "json": json.loads(results[0].to_json())}

    tracked = m.track("video.mp4", persist=True)
    report["track"] = [[int(i) for i in r.track_id] for r in tracked]

    metrics = m.val(data=data, plots=False)  # the figures are checked, not the pictures (tests/y9/test_yolo_keywords)
    report["val"] = {k: metrics.metrics[k] for k in ("map50_95", "map50")}

    onnx = m.export("model.onnx", check=False)
    report["export"] = str(onnx)
    report["onnx_predict"] = [len(r) for r in y9.Model(onnx).predict("list.txt")]
    print(json.dumps(report))
''')


def _video(path, images, size=(320, 240), repeat=2) -> int:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, size)
    assert writer.isOpened()
    n = 0
    for _ in range(repeat):
        for p in images:
            writer.write(cv2.resize(cv2.imread(str(p)), size))
            n += 1
    writer.release()
    return n


def test_a_yolo_users_first_hour_as_one_script(tmp_path):
    import y9

    coco8 = shared_path("datasets", "coco8")
    images = sorted((coco8 / "images" / "val").glob("*.jpg")) + sorted((coco8 / "images" / "train").glob("*.jpg"))
    assert len(images) == 8
    model = tmp_path / "model.pt"
    shutil.copy(y9.default_model_path(), model)
    n_frames = _video(tmp_path / "video.mp4", images[:3], repeat=1)
    (tmp_path / "list.txt").write_text("".join(f"{p}\n" for p in images[:4]))
    (tmp_path / "first_hour.py").write_text(SCRIPT)
    res = python_output(["first_hour.py", str(model), str(coco8 / "data.yaml")], cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])

    stream = report["stream"]
    assert [f[1] for f in stream["frames"]] == list(range(n_frames))  # every frame, in order, with its index
    assert {f[0] for f in stream["frames"]} == {"video.mp4"} and all(f[2] == [240, 320] for f in stream["frames"])
    assert stream["drawn"] == sum(1 for f in stream["frames"] if f[3] > 0) > 0  # boxes drawn where found

    listed = report["list"]
    assert listed["paths"] == [str(p) for p in images[:4]]  # the list's order, each result naming its image
    assert listed["run"] == "runs/predict"  # the folder y9 predict would make here
    assert {"predictions.jsonl", "predictions.csv", "predictions.json"} <= set(listed["files"])
    assert {p.name for p in images[:4]} <= set(listed["files"])  # the annotated copies
    lines = (tmp_path / "runs" / "predict" / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(line)["source"] for line in lines] == listed["paths"]
    assert [len(json.loads(line)["detections"]) for line in lines] == listed["counts"]
    assert listed["json"]["source"] == str(images[0]) and listed["json"]["frame"] is None

    tracks = report["track"]
    assert len(tracks) == n_frames and any(t >= 0 for ids in tracks for t in ids)  # ids given across the video
    assert [len(ids) for ids in tracks] == [f[3] for f in stream["frames"]]

    assert 0.0 < report["val"]["map50_95"] <= report["val"]["map50"] <= 1.0
    onnx = tmp_path / "model.onnx"
    assert report["export"] == "model.onnx" and onnx.stat().st_size > 100_000
    assert report["onnx_predict"] == listed["counts"]  # the exported model finds what the checkpoint found
