"""ModelFacts: the one record of a model's facts; its dict form, its metadata-string form, and the checks of both."""

from __future__ import annotations

import json

import pytest

from y9core.errors import ModelFileError
from y9core.model_facts import LetterboxRule, ModelFacts, size_notice
from y9deploy.facts_metadata import facts_from_props, facts_to_props

FACTS = ModelFacts(imgsz=(384, 640), names=("person", "car"), strides=(8, 16, 32), model="gelan-s",
                   recipe="default", source_sha256="ab" * 32, y9_version="0.1.0")  # fmt: skip


def test_dict_round_trip_and_normal_forms():
    data = FACTS.to_dict()
    assert json.loads(json.dumps(data)) == data and data["format"] == "y9-model-facts/1"
    assert ModelFacts.from_dict(data, "x.onnx") == FACTS
    assert ModelFacts(imgsz=[384, 640], names=["person", "car"]).names == ("person", "car")  # lists become tuples
    assert LetterboxRule(color=100).color == (100, 100, 100) and LetterboxRule(color=100).to_dict()["color"] == 100
    assert FACTS.nc == 2 and not FACTS.half and FACTS.replace(precision="fp16").half
    assert "... (80 in all)" in repr(FACTS.replace(names=tuple(f"c{i}" for i in range(80))))


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"imgsz": [0, 640]}, "'imgsz' is [0, 640]; expected [height, width] of positive integers"),
        ({"imgsz": "640"}, "'imgsz' is '640'"),
        ({"names": ["a", 3]}, "'names' is ['a', 3]; expected a list of up to"),
        ({"strides": [32, 16]}, "'strides' is [32, 16]; expected an increasing list"),
        ({"letterbox": {"color": 300}}, "'letterbox.color' is 300; expected a grey level 0..255"),
        ({"letterbox": {"auto": "yes"}}, "'letterbox.auto' is 'yes'; expected true or false"),
        ({"channels": "BGR"}, "'channels' is 'BGR'; expected 'RGB'"),
        ({"precision": "int4"}, "'precision' is 'int4'; expected 'fp32' or 'fp16' or 'int8'"),
        ({"end2end": 1}, "'end2end' is 1; expected true or false"),
        ({"source_sha256": "xyz"}, "'source_sha256' is 'xyz'; expected 64 lowercase hex digits"),
        ({"format": "y9-model-facts/9"}, "'format' is 'y9-model-facts/9'"),
        ({"speed": "fast"}, "unknown entries ['speed']"),
    ],
)
def test_every_bad_entry_is_one_sentence_naming_the_file(change, needle):
    with pytest.raises(ModelFileError) as err:
        ModelFacts.from_dict({**FACTS.to_dict(), **change}, "runs/a/best.pt")
    text = str(err.value)
    assert text.startswith("runs/a/best.pt: ") and needle in text and "\n" not in text, text
    with pytest.raises(ModelFileError, match="lack 'names'"):
        ModelFacts.from_dict({"imgsz": 640}, "m.json")
    with pytest.raises(ModelFileError, match="model facts are a list"):
        ModelFacts.from_dict([], "m.json")


def test_class_count_differences_and_the_size_notice():
    FACTS.check_classes(2, "m.onnx")
    FACTS.check_classes(None, "m.onnx")  # unknown: nothing to compare
    with pytest.raises(ModelFileError, match=r"m\.onnx: its model facts list 2 class names but the model outputs 80"):
        FACTS.check_classes(80, "m.onnx")
    other = FACTS.replace(precision="fp16", y9_version="9.9", imgsz=(640, 640))
    assert FACTS.differences(other) == ["imgsz: [384, 640] vs [640, 640]"]  # precision, version: the artifact's
    assert size_notice(FACTS, (384, 640), "m.onnx") is None
    assert size_notice(FACTS, (640, 640), "m.onnx").startswith(
        "m.onnx runs at 640x640 but the model was trained and validated at 384x640"
    )


def test_metadata_strings_carry_the_facts_and_the_input_size():
    props = facts_to_props(FACTS, input_hw=(416, 416), dynamic_batch=True)
    assert all(isinstance(v, str) for v in props.values())
    assert json.loads(props["imgsz"]) == [416, 416] and json.loads(props["trained_imgsz"]) == [384, 640]
    assert facts_from_props(props, where="m.onnx", input_hw=(416, 416), nc=2) == FACTS
    older = {k: v for k, v in props.items() if k not in ("trained_imgsz", "layout", "recipe")}  # an older y9's file
    assert facts_from_props(older, where="m.onnx").imgsz == (416, 416)
    with pytest.raises(ModelFileError, match=r"m\.onnx: metadata lists 2 class names but the model outputs 3"):
        facts_from_props(props, where="m.onnx", nc=3)
    with pytest.raises(ModelFileError, match=r"'trained_imgsz' = \[1\] is malformed"):
        facts_from_props({**props, "trained_imgsz": "[1]"}, where="m.onnx")
