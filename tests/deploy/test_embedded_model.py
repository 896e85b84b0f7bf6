"""The embedded default model (issue 11): shipped as package data, used by ``Detector()`` and ``y9 predict``
without a model, and accurate enough to show real objects on the coco8 images.

Seven of the eight coco8 images are coco128 training images of this model (tests/data/ATTRIBUTION.md): the
accuracy test shows the model and the runtime work end to end, not how well the model generalises.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import REPO, python_output
from tests.deploy.embedded import box_iou

CONF, IOU_MATCH = 0.25, 0.5


def test_default_model_path_is_package_data_and_imports_without_torch():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.') or name == 'numpy':\n"
        "            raise ImportError(name + ' is blocked in this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from y9deploy import default_model_path\n"
        "print(default_model_path())\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    path = REPO / "y9deploy" / "assets" / "y9-coco128.pt"
    assert res.stdout.strip() == str(path)
    assert path.is_file() and path.stat().st_size < 15e6
    assert (path.parent / "MODEL_CARD.md").is_file()
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "y9deploy"
    ]
    for asset in ("assets/y9-coco128.pt", "assets/MODEL_CARD.md"):  # an install carries both
        assert any(fnmatch.fnmatch(asset, g) for g in globs), (asset, globs)


def test_embedded_checkpoint_is_a_y9_fp16_coco_model(embedded_pt):
    import torch

    from y9train.checkpoint import load_checkpoint
    from y9train.models.yolo import COCO_NAMES

    payload = torch.load(embedded_pt, map_location="cpu", weights_only=True)  # plain data: nothing executes
    assert payload["format"] == "y9-checkpoint"
    floats = [v for v in payload["model"].values() if v.is_floating_point()]
    assert floats and all(v.dtype == torch.float16 for v in floats)
    model = load_checkpoint(embedded_pt)
    assert model.name in ("gelan-t", "gelan-s") and model.nc == 80 and list(model.names) == list(COCO_NAMES)


def test_missing_embedded_model_is_one_sentence(monkeypatch, tmp_path):
    import y9deploy.default_model as dm
    from y9core.errors import ModelFileError
    from y9deploy import Detector

    monkeypatch.setattr(dm, "DEFAULT_MODEL_FILE", tmp_path / "assets" / "y9-coco128.pt")
    with pytest.raises(
        ModelFileError, match=r"embedded default model .*y9-coco128\.pt is missing.*reinstall"
    ):
        Detector()
    assert dm.default_model_path(check=False) == tmp_path / "assets" / "y9-coco128.pt"


def _match(dets, gt: np.ndarray) -> int:
    """True positives: detections (by score) matched one to one to a box of the same class at IoU >= 0.5."""
    if not len(dets) or not len(gt):
        return 0
    iou = box_iou(dets.xyxy, gt[:, 1:])
    used = np.zeros(len(gt), bool)
    tp = 0
    for i in np.argsort(-dets.confidence):
        ok = (iou[i] >= IOU_MATCH) & (gt[:, 0] == dets.class_id[i]) & ~used
        if ok.any():
            used[np.flatnonzero(ok)[np.argmax(iou[i][ok])]] = True
            tp += 1
    return tp


def test_finds_the_labelled_objects_of_coco8(coco8):
    """At its own input size (416, recorded in the checkpoint) and conf 0.25: at least 60% of coco8's labelled boxes found (IoU 0.5, same class), with a
    precision of at least 0.5."""
    from y9deploy import Detector

    with Detector(conf=CONF, device="cpu") as det:  # no path: the embedded model
        assert det.imgsz == (416, 416) and len(det.names) == 80
        dets = det.predict([im.frame for im in coco8])
    tp = sum(_match(d, im.boxes) for d, im in zip(dets, coco8))
    n_gt, n_det = sum(len(im.boxes) for im in coco8), sum(len(d) for d in dets)
    assert n_gt >= 30
    assert tp >= 0.6 * n_gt and tp >= 0.5 * n_det, f"{tp} true positives of {n_gt} boxes, {n_det} detections"


def test_y9_predict_without_model_uses_the_embedded_one(coco8, tmp_path):
    from y9cli.app import app
    from y9deploy import Detector

    image = coco8[0].path
    res = CliRunner().invoke(app, ["predict", str(image), "--project", str(tmp_path), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "predict" / "predictions.json").read_text())
    with Detector(device="cpu") as det:  # the embedded model, default thresholds like y9 predict's
        want = det.predict(image)
    assert data["names"] == det.names and len(data["results"]) == 1
    got = data["results"][0]["detections"]
    assert len(got) == len(want) > 0
    np.testing.assert_allclose([d["xyxy"] for d in got], want.xyxy, atol=1e-3)
    assert [d["class_id"] for d in got] == want.class_id.tolist()


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    """``make demo``'s script (at 224 to stay fast; 15 detections there, 9 at 160), run as ``python samples/demo.py``
    runs it (as ``__main__`` in this process, ``tests.conftest.python_output``: the script, not the interpreter's start, is under test):
    real detections on the eight images, annotated copies, the JSON files, and the sm89 engine where TensorRT-RTX is
    installed."""
    import importlib.util

    out = tmp_path / "demo"
    res = python_output([REPO / "samples" / "demo.py", "--out", out, "--imgsz", "224"], cwd=REPO)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "done: everything is in" in res.stdout
    assert "random" not in res.stdout
    data = json.loads((out / "detections.json").read_text())
    assert [r["image"] for r in data["results"]] == [
        p.name for p in sorted((REPO / "tests" / "data").glob("*.jpg"))
    ]
    assert sum(len(r["detections"]) for r in data["results"]) >= 10
    assert len(list(out.glob("annotated-*.jpg"))) == 8 and (out / "benchmark.json").is_file()
    if importlib.util.find_spec("tensorrt_rtx") is not None:
        assert list(out.glob("*-sm89.engine")) and list(out.glob("*-sm89.engine.json"))
