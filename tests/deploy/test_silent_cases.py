"""Outputs and reports are what their names say (issue 57, items 5 and 7): each case that went through without a
word is now refused in one sentence or named in a warning."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import shared_path, y9_output
from y9deploy.facts import inspect_facts


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    from y9train.checkpoints.load import checkpoint_payload, save_checkpoint
    from y9train.models import build_model

    folder = tmp_path_factory.mktemp("pt")
    model = build_model("gelan-t", nc=2).eval()
    sealed = save_checkpoint(model, folder / "sealed.pt", imgsz=64)
    bare = folder / "bare.pt"
    torch.save(checkpoint_payload(model, bare, imgsz=64), bare)  # a y9 payload without its digest (an older y9)
    return {"sealed": sealed, "bare": bare}


def test_info_says_a_checkpoint_without_a_digest_was_not_checked(small):
    assert inspect_facts(small["sealed"]).checked[0] == "zip CRCs, tensor digest and entry types of the checkpoint"
    bare = inspect_facts(small["bare"]).checked[0]
    assert "not checked: no tensor digest recorded" in bare and "tensor digest and" not in bare
    official = inspect_facts(shared_path("fixtures", "official", "gelan-t-converted-official-format.pt")).checked[0]
    assert "not checked: no digest" in official and "tensor digest and" not in official
    res = y9_output("info", small["bare"])
    assert res.returncode == 0 and "not checked: no" in res.stdout  # in the table of y9 info (wrapped)


@pytest.mark.parametrize("name", ["x.onnx", "x.txt", "x"])
def test_reparam_refuses_an_output_that_is_not_a_pt_file(small, tmp_path, name):
    res = y9_output("reparam", small["sealed"], tmp_path / name)
    assert res.returncode == 2 and not (tmp_path / name).exists()
    assert f"output {tmp_path / name} has suffix" in res.stderr and "expected .pt" in res.stderr


def test_a_glob_through_a_folder_link_that_loops_visits_each_file_once(tmp_path):
    import shutil

    from tests.conftest import TEST_DATA
    from y9deploy.pipelines.sources import expand_glob

    folder = tmp_path / "imgs"
    folder.mkdir()
    shutil.copy(sorted(TEST_DATA.glob("*.jpg"))[0], folder / "a.jpg")
    (folder / "loop").symlink_to(folder)
    assert expand_glob(f"{folder}/**/*.jpg") == [folder / "a.jpg"]
    res = y9_output("predict", f"{folder}/**/*.jpg", "--project", tmp_path, "--name", "p", "--device", "cpu")
    assert res.returncode == 0, res.stderr
    assert len((tmp_path / "p" / "predictions.jsonl").read_text().splitlines()) == 1


def test_a_tiff_of_several_pages_says_which_page_it_read(tmp_path):
    import cv2
    import numpy as np

    pages = [np.full((64, 64, 3), v, np.uint8) for v in (40, 200, 90)]
    tif = tmp_path / "scan.tif"
    assert cv2.imwritemulti(str(tif), pages)
    res = y9_output("predict", tif, "--no-save", "--device", "cpu")
    assert res.returncode == 0, res.stderr
    assert f"warning: {tif} is a TIFF of 3 pages; y9 read page 1 only" in " ".join(res.stderr.split())
    single = tmp_path / "one.tif"
    cv2.imwrite(str(single), pages[0])
    assert "pages" not in y9_output("predict", single, "--no-save", "--device", "cpu").stderr


def _without_digest(src, dst):
    import onnx

    from y9deploy.model_file.onnx_digest import DIGEST_KEY

    model = onnx.load(str(src))
    kept = [p for p in model.metadata_props if p.key != DIGEST_KEY]
    assert len(kept) < len(model.metadata_props) and any(p.key == "y9_version" for p in kept)
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(dst))
    return dst


def test_build_engine_of_a_y9_onnx_without_its_digest_warns_as_predict_does(small, tmp_path):
    from y9core.model_facts import FactsWarning
    from y9deploy import export_onnx
    from y9deploy.engine.builder import build_engine_report

    sealed = export_onnx(small["sealed"], tmp_path / "m.onnx", imgsz=64, simplify=False)
    bare = _without_digest(sealed, tmp_path / "bare.onnx")
    with pytest.warns(FactsWarning, match=r"bare.onnx was written by y9 but has no 'y9_digest' metadata entry"):
        build_engine_report(bare, tmp_path / "bare.engine", target="sm89", batch=1)
    assert (tmp_path / "bare.engine").is_file()


def test_load_checkpoint_warns_when_class_names_repeat(tmp_path):
    import warnings

    from y9core.model_facts import FactsWarning
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    model = build_model("gelan-t", nc=80).eval()
    model.names = ["person"] * 80
    path = save_checkpoint(model, tmp_path / "same.pt", imgsz=64)
    with pytest.warns(FactsWarning, match=r"same.pt: its class names repeat \('person' 80 times\)"):
        load_checkpoint(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FactsWarning)
        load_checkpoint(save_checkpoint(build_model("gelan-t", nc=2).eval(), tmp_path / "ok.pt", imgsz=64))


def test_from_supervision_says_when_one_class_id_has_two_names():
    import numpy as np
    import supervision as sv

    from y9core.model_facts import FactsWarning
    from y9deploy import Detections

    sv_dets = sv.Detections(xyxy=np.array([[0, 0, 10, 10], [5, 5, 20, 20]], np.float32),
                            confidence=np.array([0.9, 0.8], np.float32), class_id=np.array([0, 0]),
                            data={"class_name": np.array(["cat", "dog"])})  # fmt: skip
    with pytest.warns(FactsWarning, match=r"names class 0 both 'cat' and 'dog'; y9 keeps 'cat'"):
        dets = Detections.from_supervision(sv_dets)
    assert dets.names[0] == "cat"
