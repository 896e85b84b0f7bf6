"""``y9.Model`` (issue 35 item 4): a thin object over the library functions whose defaults come from the model's
own facts (the size it was trained at, its class names)."""

from __future__ import annotations

from functools import wraps
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import y9
from tests.conftest import TEST_DATA
from tests.deploy.embedded import COCO8, IMGSZ


def _recorded_imgsz(path) -> tuple[int, int]:
    """The training size a y9 checkpoint records, read with torch directly (plain data, weights_only)."""
    import torch

    size = torch.load(path, map_location="cpu", weights_only=True)["meta"]["imgsz"]
    return (size, size) if isinstance(size, int) else tuple(size)


def test_info_of_a_checkpoint_reads_its_own_facts(embedded_pt):
    from y9train.checkpoint import load_checkpoint

    net = load_checkpoint(embedded_pt)
    info = y9.Model(embedded_pt).info()
    assert info.kind == "checkpoint" and info.architecture == net.name
    assert info.imgsz == _recorded_imgsz(embedded_pt)
    assert list(info.names) == list(net.names) and info.nc == net.nc
    assert info.params == sum(p.numel() for p in net.parameters())
    text = str(info)
    assert f"{info.imgsz[0]}x{info.imgsz[1]} (trained at)" in text and f"{info.params:,}" in text


def test_info_of_an_onnx_model_is_what_the_detector_reads(embedded_export):
    onnx = embedded_export(IMGSZ)
    with y9.Detector(onnx) as det:
        names, hw = list(det.names), tuple(det.backend.info.imgsz)
    info = y9.Model(onnx).info()
    assert info.kind == "onnx" and list(info.names) == names and info.imgsz == hw
    assert info.params is None and info.gflops is None


def test_info_of_an_engine_reads_its_manifest(embedded_export, tmp_path):
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine
    from y9deploy.engine.manifest import read_manifest

    onnx = embedded_export(IMGSZ)
    engine = build_engine(onnx, tmp_path / "m.engine", target="sm89")  # ahead of time: no GPU needed to build
    info = y9.Model(engine).info()
    manifest = read_manifest(engine)
    assert info.kind == "engine" and info.imgsz == tuple(manifest.imgsz) and list(info.names) == manifest.names
    assert info.names == y9.Model(onnx).info().names


def test_predict_is_the_detectors_on_frames_paths_and_folders(embedded_pt, coco8, tmp_path):
    """Every source gives a list of ``y9.Result`` whose detections are the Detector's, each naming its image."""
    folder = tmp_path / "images"
    folder.mkdir()
    for p in COCO8[:3]:
        (folder / p.name).write_bytes(p.read_bytes())
    with y9.Detector(embedded_pt) as det, y9.Model(embedded_pt) as model:
        want = det.predict([c.frame for c in coco8[:3]])
        (one,) = model.predict(coco8[0].frame, conf=0.5)
        assert isinstance(one, y9.Result) and isinstance(one.detections, y9.Detections)
        assert one.path == "image0" and one.frame is None and one.orig_shape == coco8[0].frame.shape[:2]
        ref = det.predict(coco8[0].frame, conf=0.5)
        np.testing.assert_array_equal(one.detections.xyxy, ref.xyxy)
        paths = [c.path for c in coco8[:3]]
        for got, named in ((model.predict(paths, batch=3), paths), (model.predict(folder, batch=3),
                                                                    sorted(folder.iterdir()))):  # fmt: skip
            assert [r.path for r in got] == [str(p) for p in named]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g.detections.xyxy, w.xyxy)
                np.testing.assert_array_equal(g.detections.class_id, w.class_id)


def test_val_export_and_train_default_to_the_trained_size(embedded_pt, monkeypatch, tmp_path):
    """The library functions are the things that work; what the Model hands them is checked here."""
    import y9.val as val_module
    import y9deploy.export.onnx_export as export_module
    import y9train.run.train as train_module

    seen: dict[str, dict] = {}
    from y9core.evaluation.result import ValResult

    def fake_val(data, model, **kw):
        seen["val"] = kw
        return ValResult(metrics={}, imgsz=_recorded_imgsz(embedded_pt))  # what val_model says it ran at

    monkeypatch.setattr(val_module, "val_model", fake_val)
    fake_export = wraps(export_module.export_onnx_report)(  # its signature: the options Model.export checks
        lambda src, path, **kw: seen.setdefault("export", {**kw, "path": path}) and SimpleNamespace(path=path))
    monkeypatch.setattr(export_module, "export_onnx_report", fake_export)
    monkeypatch.setattr(train_module, "train", lambda **kw: seen.setdefault("train", kw) and None)
    h, w = _recorded_imgsz(embedded_pt)
    model = y9.Model(embedded_pt)
    import y9core.evaluation.report as report_module

    monkeypatch.setattr(report_module, "write_val_report", lambda res, folder, **kw: seen.setdefault("report", {
        **kw, "folder": folder}))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    model.val(TEST_DATA / "coco8.yaml", batch=4)
    assert seen["val"] == {"batch": 4}  # the size is the library's rule (the trained size: the test below)
    assert seen.pop("report")["folder"] == Path("runs") / "val"  # y9 val's report, in its run folder
    model.val(TEST_DATA / "coco8.yaml", save_dir="out", save_json=True)
    assert seen["report"]["folder"] == "out" and seen["report"]["save_json"] is True
    assert seen["report"]["about"]["imgsz"] == [h, w]  # the size it ran at, recorded in metrics.json
    seen.pop("report")
    model.val(TEST_DATA / "coco8.yaml", project=tmp_path / "runs", name="v")  # y9 val's run folder options
    assert seen["report"]["folder"] == tmp_path / "runs" / "v"
    with pytest.raises(TypeError, match=r"Model.val\(\) got save_dir and project/name"):
        model.val(TEST_DATA / "coco8.yaml", save_dir="out", name="v2")
    model.export("out.onnx", dynamic_batch=True)
    assert seen["export"]["dynamic_batch"] is True and "imgsz" not in seen["export"]  # export_onnx: the facts
    with pytest.raises(TypeError, match="Model.export\\(\\) has no option 'chek' \\(did you mean 'check'\\?\\)"):
        model.export("out.onnx", chek=False)
    with pytest.raises(TypeError, match="Model.val\\(\\) has no option 'epochs'"):
        model.val(TEST_DATA / "coco8.yaml", epochs=3)
    with pytest.raises(AttributeError):  # the fake train returns None: the Model keeps its weights
        model.train(TEST_DATA / "coco8.yaml", epochs=1)
    assert "imgsz" not in seen["train"] and seen["train"]["model"] == str(embedded_pt)  # the trainer's rule


def test_val_of_a_rectangular_checkpoint_runs_at_its_trained_size_without_a_warning(embedded_pt, tmp_path):
    """A checkpoint trained at 320x416 validates square at 416, the longer side (the loader letterboxes to a
    square), as ``y9 val`` does, and says nothing of the size, which the user did not give (it warned that 416x416
    differed from 320x416)."""
    import warnings

    from y9core.model_facts import FactsWarning
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.load import save_checkpoint

    rect = save_checkpoint(load_checkpoint(embedded_pt), tmp_path / "rect.pt", imgsz=[320, 416], epoch=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FactsWarning)
        got = y9.Model(rect).val(TEST_DATA / "coco8.yaml", batch=8, workers=0, plots=False)  # no picture checked
    assert got.imgsz == (416, 416) and got.images == 8 and got.metrics["map50_95"] > 0.3


def test_what_a_model_cannot_do_is_refused_in_one_sentence(embedded_export, tmp_path):
    with pytest.raises(ValueError, match="gelan-x"):
        y9.Model("gelan-x")
    with pytest.raises(FileNotFoundError, match="missing.pt does not exist"):
        y9.Model(tmp_path / "missing.pt")
    (tmp_path / "dir.onnx").mkdir()
    with pytest.raises(FileNotFoundError, match="is a folder"):
        y9.Model(tmp_path / "dir.onnx")
    with pytest.raises(TypeError, match="expected a model name"):
        y9.Model(3)
    arch = y9.Model("gelan-t")
    assert arch.kind == "architecture" and arch.path is None
    for action, call in (("be validated", lambda: arch.val("data.yaml")), ("predict", lambda: arch.predict("x.jpg")),
                         ("be exported", lambda: arch.export())):  # fmt: skip
        with pytest.raises(ValueError, match=f"untrained weights, so it cannot {action}"):
            call()
    onnx = y9.Model(embedded_export(IMGSZ))
    with pytest.raises(ValueError, match="export works on .pt checkpoints"):
        onnx.export()
    with pytest.raises(ValueError, match="train from its .pt checkpoint"):
        onnx.train("data.yaml")
