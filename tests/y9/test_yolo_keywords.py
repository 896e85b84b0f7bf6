"""``y9.Model`` as a YOLO user calls it (issue 52 items 3-6, issue 57 items 5-6): the model object, ``r.boxes`` on the
same numbers as ``r.detections``, YOLO tools' keywords (taken, or refused in one sentence with the reason), one
imgsz rule, export formats and suffixes (API and CLI), and arguments of the wrong type."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import y9
from tests.checkpoint_reads import read_each_checkpoint_once
from tests.conftest import TEST_DATA

IMAGE = str(TEST_DATA / "000000000036.jpg")


@pytest.fixture(scope="module", autouse=True)
def _checkpoints_read_once():
    """Each .pt file read once for the module: every Detector (a new imgsz, a new Model) is still made
    (tests/checkpoint_reads.py)."""
    with pytest.MonkeyPatch.context() as patch:
        yield read_each_checkpoint_once(patch)


@pytest.fixture(scope="module")
def model():
    return y9.Model()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "best.pt"
    shutil.copy(y9.default_model_path(), path)
    return path


def test_the_model_object(model, tmp_path):
    assert model.fuse() is model and model.to("cpu") is model and model.device == "cpu"
    names = model.names
    assert isinstance(names, dict) and names[0] == "person" and len(names) == 80
    called, predicted = model(IMAGE)[0], model.predict(IMAGE)[0]
    np.testing.assert_array_equal(called.detections.xyxy, predicted.detections.xyxy)
    assert model.device == "cpu"
    with pytest.raises(ValueError, match="y9's trainer has the events"):
        model.add_callback("on_val_end", print)
    model.add_callback("on_fit_epoch_end", print)
    with pytest.raises(FileNotFoundError, match=r"model config .*yolov9t.yaml does not exist"):
        y9.Model(str(tmp_path / "yolov9t.yaml"))


def test_boxes_read_the_detections(model):
    import cv2

    r = model.track(cv2.imread(IMAGE))[0]
    b, d = r.boxes, r.detections
    assert len(b) == len(d) > 0 and r.names == dict(enumerate(d.names))
    np.testing.assert_array_equal(b.xyxy, d.xyxy)
    np.testing.assert_array_equal(b.conf.cpu().numpy(), d.confidence)
    np.testing.assert_array_equal(b.cls, d.class_id.astype(np.float32))
    np.testing.assert_array_equal(b.id.int().tolist(), r.track_id.tolist())
    h, w = r.orig_shape
    x1, y1, x2, y2 = d.xyxy.T
    np.testing.assert_allclose(b.xywh, np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1), rtol=1e-6)
    np.testing.assert_allclose(b.xyxyn, d.xyxy / [w, h, w, h], rtol=1e-6)
    np.testing.assert_allclose(b.data[:, [0, 1, 2, 3, 5, 6]], np.c_[d.xyxy, d.confidence, d.class_id], rtol=1e-6)
    rows = [(box.xyxy[0].tolist(), int(box.cls), float(box.conf)) for box in b]
    assert rows == [(d.xyxy[i].tolist(), int(d.class_id[i]), float(d.confidence[i])) for i in range(len(d))]
    assert len(b[1:3]) == min(2, len(b) - 1) and len(b[d.confidence > 0.5]) == int((d.confidence > 0.5).sum())
    assert r.speed and set(r.speed) == {"preprocess", "inference", "postprocess"}


def test_one_imgsz_rule():
    from y9.imgsz_rule import ImageSizeWarning, check_imgsz

    assert check_imgsz("predict", 640) == 640 and check_imgsz("predict", (480, 640)) == (480, 640)
    with pytest.warns(ImageSizeWarning, match="500 is not a multiple of the stride 32; using 512"):
        assert check_imgsz("predict", 500) == 512
    with pytest.warns(ImageSizeWarning):
        assert check_imgsz("Model.val", [500, 500], square=True) == 512
    with pytest.raises(TypeError, match=r"imgsz='big'\); expected a whole number of pixels"):
        check_imgsz("Model.train", "big")
    with pytest.raises(ValueError, match="takes one square size"):
        check_imgsz("Model.val", (480, 640), square=True)


def test_predict_rounds_imgsz_up_with_a_warning(model):
    import cv2

    from y9.imgsz_rule import ImageSizeWarning

    with pytest.warns(ImageSizeWarning, match="using 320"):
        r = model.predict(IMAGE, imgsz=300)[0]
    with y9.Detector(y9.default_model_path(), imgsz=320) as det:
        want = det.predict(cv2.imread(IMAGE))
    np.testing.assert_array_equal(r.detections.xyxy, want.xyxy)
    np.testing.assert_array_equal(r.detections.class_id, want.class_id)


@pytest.mark.parametrize(("call", "match"), [
    (lambda m, c: m.predict(IMAGE, save="no"), r"save='no'\); expected True or False"),
    (lambda m, c: m.predict(IMAGE, imgsz="big"), r"imgsz='big'\); expected a whole number"),
    (lambda m, c: y9.Model(c).export(opset="new"), r"opset='new'\); expected a whole number"),
    (lambda m, c: y9.Model(c).train(data="data.yaml", batch=2.5), r"batch=2.5\); expected a whole number"),
    (lambda m, c: y9.Model(c).val(data="data.yaml", imgsz="big"), r"imgsz='big'\); expected a whole number"),
    (lambda m, c: m.predict(IMAGE, show=True), "has no option 'show': y9 opens no windows"),
    (lambda m, c: y9.Model(c).train(data="data.yaml", fraction=0.5), "has no option 'fraction': y9 trains on"),
    (lambda m, c: y9.Model(c).train(data="data.yaml", optimizer="Adam"), "y9 has sgd, adamw, auto"),
])  # fmt: skip
def test_wrong_keywords_and_types_are_one_sentence(model, checkpoint, call, match):
    with pytest.raises((TypeError, ValueError), match=match) as info:
        call(model, checkpoint)
    assert "\n" not in str(info.value)


def test_train_takes_yolo_keywords_as_overrides(checkpoint, monkeypatch):
    import y9train.run.train as train_module

    seen = {}
    monkeypatch.setattr(train_module, "train", lambda **kw: seen.update(kw))
    with pytest.raises(AttributeError):  # the stand-in returns None
        y9.Model(checkpoint).train(data="d.yaml", lr0=0.02, optimizer="SGD", patience=5, cos_lr=True, cache=True,
                                   amp=False, batch=8.0, imgsz=500)  # fmt: skip
    assert seen["overrides"] == {"lr0": 0.02, "optimizer": "sgd", "patience": 5, "schedule": "cosine"}
    assert (seen["cache"], seen["amp"], seen["batch"], seen["imgsz"]) == ("ram", "off", 8, 512)


def test_export_format_and_suffix(checkpoint, tmp_path):
    m = y9.Model(checkpoint)
    with pytest.raises(ValueError, match=r"x.torchscript ends in '.torchscript', but the export writes an ONNX"):
        m.export(tmp_path / "x.torchscript")
    with pytest.raises(ValueError, match=r"format='torchscript'; y9 exports 'onnx' and 'engine'"):
        m.export(format="torchscript")
    with pytest.raises(ValueError, match="writes a TensorRT engine; expected a name ending in .engine"):
        m.export(tmp_path / "x.onnx", format="engine")
    assert not list(tmp_path.iterdir())


def test_export_default_path_leaves_the_installed_package(checkpoint, tmp_path, monkeypatch):
    from y9deploy.export.target import default_export_path

    monkeypatch.chdir(tmp_path)
    assert default_export_path(checkpoint) == checkpoint.with_suffix(".onnx")  # beside the user's weights
    out = default_export_path(y9.default_model_path())  # the embedded model, inside the package
    assert out.resolve() == (tmp_path / "runs" / "export" / y9.default_model_path().with_suffix(".onnx").name)


def test_cli_export_refuses_an_output_of_another_suffix(checkpoint, tmp_path, capsys):
    from y9cli.app import run

    for name in ("e2.pt", "x.txt"):
        assert run(["export", str(checkpoint), "-o", str(tmp_path / name), "--no-check"]) == 2
        assert f"{name} ends in" in capsys.readouterr().err and not (tmp_path / name).exists()


def test_cli_train_takes_overrides_written_as_options():
    from typer.main import get_command

    from y9cli.app import app
    from y9cli.key_values import as_options

    got = as_options(get_command(app), ["train", "--data", "d.yaml", "--lr0", "0.01", "--cos-lr", "--momentum=0.9"])
    assert got == ["train", "--data", "d.yaml", "lr0=0.01", "cos_lr=true", "momentum=0.9"]


def test_val_reads_as_yolo_metrics():
    """``metrics.box`` and ``results_dict`` read the evaluator's figures (COCO's evaluation of a made-up split: one
    class found exactly, one half-found, one never predicted)."""
    from y9core.evaluation.metrics import evaluate
    from y9core.evaluation.result import ValResult

    targets = [np.array([[0, 10, 10, 50, 50], [1, 60, 60, 90, 90]], np.float32),
               np.array([[1, 5, 5, 40, 40], [3, 100, 100, 140, 150]], np.float32)]  # fmt: skip
    preds = [np.array([[10, 10, 50, 50, 0.9, 0], [60, 60, 90, 90, 0.8, 1]], np.float32),
             np.array([[20, 20, 60, 60, 0.7, 1]], np.float32)]  # fmt: skip
    res = evaluate(preds, targets, nc=5)
    metrics = ValResult.from_evaluation(res, preds, targets, ["a.jpg", "b.jpg"], seconds=1.0, infer_seconds=0.5)
    box = metrics.box
    assert (box.map, box.map50, box.map75) == (res["map50_95"], res["map50"], res["map75"])
    per_class = {r["class"]: r["map50_95"] for r in res["per_class"]}
    assert len(box.maps) == 5 and all(box.maps[c] == v for c, v in per_class.items() if v == v)
    assert box.maps[0] == 1.0 and 0 < box.maps[1] < 1 and box.maps[3] == 0.0 and box.maps[2] == box.map
    assert box.ap_class_index.tolist() == [0, 1, 3]
    assert metrics.results_dict["metrics/mAP50-95(B)"] == box.map and metrics.speed == {"inference": 250.0}


def test_cli_takes_yolo_keys(tmp_path, capsys):
    from typer.main import get_command

    from y9cli.app import app, run
    from y9cli.key_values import as_options

    group = get_command(app)
    got = as_options(group, ["export", "model=best.pt", "format=onnx", "dynamic=True", "nms=true"])
    assert got == ["export", "--dynamic-batch", "--end2end", "best.pt"]
    got = as_options(group, ["predict", "source=x.jpg", "save=False", "verbose=False", "agnostic_nms=True",
                             "line_width=2", "show_conf=False"])  # fmt: skip
    assert got == ["predict", "--no-save", "--agnostic-nms", "--line-width", "2", "--hide-conf", "x.jpg"]
    with pytest.raises(ValueError, match="format='torchscript'; y9 export writes ONNX; 'y9 build-engine"):
        as_options(group, ["export", "m.pt", "format=torchscript"])
    args = ["predict", IMAGE, "agnostic_nms=true", "line_width=1", "show_labels=false", "--project", str(tmp_path)]
    assert run(args) == 0, capsys.readouterr().err
    assert (tmp_path / "predict" / "000000000036.jpg").is_file()


def test_val_plots_false_leaves_the_pictures_out(checkpoint, tmp_path):
    """``Model.val(plots=False)``, ``y9 val --no-plots`` and ``y9 val plots=false`` write the report's files without
    its pictures; the default draws them (``tests/deploy/test_val_report.py`` checks those pictures)."""
    from typer.main import get_command

    from tests.conftest import shared_path, y9_output
    from y9cli.app import app
    from y9cli.key_values import as_options

    assert as_options(get_command(app), ["val", "plots=false"]) == ["val", "--no-plots"]
    data = shared_path("datasets", "coco8", "data.yaml")
    small = {"imgsz": 64, "batch": 8, "workers": 0, "device": "cpu"}
    api = y9.Model(checkpoint).val(data=str(data), plots=False, save_dir=tmp_path / "api", **small)
    res = y9_output("val", "--data", data, "--model", checkpoint, "plots=false", "--project", tmp_path / "cli",
                    *[a for k, v in small.items() for a in (f"--{k}", str(v))])  # fmt: skip
    assert res.returncode == 0, res.stderr
    for folder in (api.save_dir, tmp_path / "cli" / "val"):
        written = sorted(p.name for p in folder.iterdir())
        assert "metrics.json" in written and "confusion_matrix.csv" in written, written
        assert not [n for n in written if n.endswith(".png")], written
