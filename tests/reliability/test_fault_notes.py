"""Notes and messages of issue 46: an ONNX written by y9 whose digest entry was removed is said (once) to run
unchecked; a class name over the length limit gets a sentence naming it, in a data.yaml and in model facts."""

from __future__ import annotations

import warnings

import pytest
import yaml

from tests.deploy.runtime_support import export_tiny_onnx
from tests.train.data_fixtures import coco_pair_dataset
from y9core.errors import DataError, ModelFileError
from y9core.model_facts import FactsWarning, check_names
from y9deploy.model_file.onnx_digest import seal


def test_a_y9_onnx_without_its_digest_is_said_to_be_unchecked_once(tmp_path):
    from y9deploy import Detector

    path = export_tiny_onnx(tmp_path / "m.onnx")  # y9 metadata, no digest entry
    with pytest.warns(FactsWarning, match=r"m\.onnx was written by y9 but has no 'y9_digest' metadata entry, so its "
                                          "bytes are not checked"):  # fmt: skip
        Detector(path).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FactsWarning)
        Detector(path).close()  # once per file
        sealed = tmp_path / "sealed.onnx"
        sealed.write_bytes(seal(path.read_bytes()))
        Detector(sealed).close()  # checked: no note


def test_a_class_name_over_the_limit_is_one_sentence_in_model_facts():
    with pytest.raises(ModelFileError) as info:
        check_names(["ok", "n" * 300], "m.onnx")
    assert str(info.value).startswith("m.onnx: model facts entry 'names[1]' is a class name of 300 characters ('nnn")
    assert str(info.value).endswith("expected at most 200 characters per class name.")


def test_a_class_name_over_the_limit_is_one_sentence_in_a_data_yaml(tmp_path):
    from y9core.data.yaml_config import load_data_yaml

    data = coco_pair_dataset(tmp_path)
    raw = yaml.safe_load(data.read_text())
    raw.pop("nc")
    raw["names"] = ["a", "b" * 300]
    data.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataError) as info:
        load_data_yaml(data)
    message = str(info.value)
    assert message.startswith(f"data.yaml {data} names class 1 with 300 characters ('bbb") and len(message) < 300
    assert message.endswith("expected a class name of at most 200 characters."), message
