"""The model facts at run time: an end-to-end ONNX must name every class its graph has, and a Detector run at
another size than the model was trained at says so once."""

from __future__ import annotations

import json
import warnings

import onnx
import pytest

from y9core.errors import ModelFileError
from y9core.model_facts import FactsWarning
from y9deploy.model_file.onnx_digest import DIGEST_KEY, seal

NAMES = ["a", "b", "c"]


def test_an_end2end_onnx_with_3_names_for_80_classes_is_refused(embedded_export, tmp_path):
    from y9deploy import Detector

    path = _with_props(embedded_export(dynamic_batch=True, end2end=True), tmp_path / "e2e-lie.onnx", names=json.dumps(NAMES))
    with pytest.raises(ModelFileError) as err:
        Detector(path, device="cpu")
    text = str(err.value)
    assert str(path) in text and "3 class names but the model outputs 80 classes" in text and "\n" not in text


def _with_props(src, dst, **changes):
    model = onnx.load(str(src))
    props = {p.key: p.value for p in model.metadata_props if p.key != DIGEST_KEY}
    props.update(changes)
    del model.metadata_props[:]
    for k, v in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    dst.write_bytes(seal(model.SerializeToString()))  # sealed again, as y9 export writes it: its digest is checked
    return dst


def test_another_size_than_the_trained_one_is_said_once(embedded_export, tmp_path):
    """(A .pt run with an explicit other imgsz goes through the same Detector check.)"""
    from y9deploy import Detector

    # an ONNX whose model was trained at 640 (as an export at another size records it)
    other = _with_props(embedded_export(), tmp_path / "m.onnx", trained_imgsz="[640, 640]")
    with pytest.warns(FactsWarning, match=r"m\.onnx runs at 416x416 but the model was trained and validated at 640x640") as w:
        Detector(other, device="cpu").close()
    assert len([x for x in w if issubclass(x.category, FactsWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", FactsWarning)  # the trained size: nothing to say
        Detector(embedded_export(), device="cpu").close()


def test_the_cli_prints_the_notice_once_as_one_line(embedded_export, tmp_path, capsys):
    from tests.conftest import TEST_DATA
    from y9cli.app import main

    other = _with_props(embedded_export(), tmp_path / "m.onnx", trained_imgsz="[640, 640]")
    with pytest.raises(SystemExit) as done:
        main(["predict", str(TEST_DATA / "000000000036.jpg"), "--model", str(other), "--save-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert done.value.code == 0, err
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and "m.onnx runs at 416x416 but the model was trained and validated at 640x640" in warned[0]
    assert "FactsWarning" not in err
