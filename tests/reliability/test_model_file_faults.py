"""ONNX files that are not YOLO detectors of the declared shape, damaged metadata, and bit flips in ONNX files.

Each bad file is refused when it is opened (Detector, the onnxruntime backend, `y9 info`) with one sentence
naming the file, the value found and what was expected.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.deploy.runtime_support import export_tiny_onnx, y9_metadata
from y9core.errors import ModelFileError
from y9deploy import Detector

HW = (64, 64)  # strides 8/16/32: 64 + 16 + 4 = 84 anchors


def _save(path, nodes, inputs, outputs, inits, metadata=None):
    model = helper.make_model(
        helper.make_graph(nodes, "bad", inputs, outputs, inits), opset_imports=[helper.make_opsetid("", 17)]
    )
    onnx.checker.check_model(model)
    for k, v in (metadata or y9_metadata(["a", "b", "c"], HW)).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(model, str(path))
    return path


def _stride8_head(path, *, in_type=TensorProto.FLOAT):
    """images -> one stride-8 conv -> output0 [1, 7, 64]: a head with the anchors of stride 8 only."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((7, 3, 8, 8)).astype(np.float32) * 0.1, "w"),
        numpy_helper.from_array(np.array([1, 7, 64], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Cast", ["images"], ["x"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["x", "w"], ["f"], strides=[8, 8]),
        helper.make_node("Reshape", ["f", "shape"], ["r"]),
        helper.make_node("Sigmoid", ["r"], ["output0"]),
    ]
    return _save(
        path,
        nodes,
        [helper.make_tensor_value_info("images", in_type, [1, 3, *HW])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 7, 64])],
        inits,
    )


def _classifier(path):
    """images -> global average pool -> 10 logits: an image classifier, output [1, 10]."""
    w = numpy_helper.from_array(np.ones((10, 3), np.float32), "w")
    nodes = [
        helper.make_node("GlobalAveragePool", ["images"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w"], ["output0"], transB=1),
    ]
    return _save(
        path,
        nodes,
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, *HW])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 10])],
        [w],
        metadata=y9_metadata([f"c{i}" for i in range(6)], HW),
    )


def _refused(path, *needles):
    with pytest.raises(ModelFileError) as err:
        Detector(path, device="cpu")
    text = str(err.value)
    assert str(path) in text and "\n" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


def test_wrong_anchor_count_for_the_input_size(tmp_path):
    _refused(_stride8_head(tmp_path / "anchors.onnx"), "has 64 anchors", "64x64", "gives 84")


def test_classifier_output(tmp_path):
    _refused(_classifier(tmp_path / "classifier.onnx"), "'output0'", "[1, 10]", "[B, 4 + classes, anchors]")


def test_input_of_another_dtype(tmp_path):
    _refused(_stride8_head(tmp_path / "uint8.onnx", in_type=TensorProto.UINT8), "uint8", "float32 or float16")


@pytest.fixture(scope="module")
def good_onnx(tmp_path_factory):
    return export_tiny_onnx(tmp_path_factory.mktemp("good") / "tiny.onnx", imgsz=HW)


def test_nan_weights_give_nan_outputs_refused_at_load(good_onnx, tmp_path):
    model = onnx.load(str(good_onnx))
    init = max(model.graph.initializer, key=lambda t: numpy_helper.to_array(t).size)
    weights = numpy_helper.to_array(init).copy()
    weights.flat[:: max(1, weights.size // 8)] = np.nan
    init.CopyFrom(numpy_helper.from_array(weights, init.name))
    onnx.save(model, str(tmp_path / "nan.onnx"))
    _refused(tmp_path / "nan.onnx", "NaN or infinite", "'output0'")


def _with_metadata(src, dst, **changes):
    model = onnx.load(str(src))
    props = {p.key: p.value for p in model.metadata_props}
    for k, v in changes.items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    del model.metadata_props[:]
    for k, v in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(model, str(dst))
    return dst


@pytest.mark.parametrize(
    "changes, needles",
    [
        ({"names": None}, ["lacks names", "re-export"]),
        ({"stride": None, "letterbox": None}, ["lacks stride, letterbox"]),
        ({"names": "not json"}, ["'names'", "not valid JSON"]),
        ({"names": "5"}, ["'names' = 5", "list of class names"]),
        ({"names": '{"a": "x", "b": "y", "c": "z"}'}, ["'names'", "{index: name}"]),
        ({"names": '["a", "b"]'}, ["2 class names", "outputs 3 classes"]),
        ({"imgsz": "[64]"}, ["'imgsz' = [64]", "[height, width]"]),
        ({"imgsz": "[96, 96]"}, ["imgsz [96, 96]", "64x64"]),
        ({"stride": '["a"]'}, ["'stride'", "positive integers"]),
        ({"stride": "[8]"}, ["has 84 anchors", "strides [8]", "gives 64"]),
        ({"letterbox": "[1]"}, ["'letterbox' = [1]", "an object"]),
        ({"letterbox": '{"color": 300}'}, ["'letterbox'", "0..255"]),
    ],
)
def test_missing_or_malformed_metadata_names_the_file(good_onnx, tmp_path, changes, needles):
    _refused(_with_metadata(good_onnx, tmp_path / "meta.onnx", **changes), *needles)


@pytest.mark.parametrize(
    "changes, needles",
    [
        ({"names": None}, ["lacks the y9 metadata names"]),
        ({"names": "5"}, ["'names' = 5", "list of class names"]),
        ({"imgsz": "[64]"}, ["'imgsz' = [64]", "[height, width]"]),
        ({"letterbox": "[1]"}, ["'letterbox' = [1]"]),
        ({"nms_defaults": "[0.5]"}, ["'nms_defaults'", "JSON object of numbers"]),
    ],
)
def test_read_metadata_names_the_file_the_entry_and_the_value(good_onnx, tmp_path, changes, needles):
    from y9deploy.export.metadata import read_metadata

    path = _with_metadata(good_onnx, tmp_path / "meta.onnx", **changes)
    with pytest.raises(ModelFileError) as err:
        read_metadata(path)
    assert str(path) in str(err.value) and all(n in str(err.value) for n in needles), err.value


def test_foreign_model_without_metadata_warns_with_the_path(good_onnx, tmp_path):
    keys = {p.key: None for p in onnx.load(str(good_onnx)).metadata_props}
    path = _with_metadata(good_onnx, tmp_path / "foreign.onnx", **keys)
    with pytest.warns(UserWarning, match=f"{path}.*no 'names'.*class0..class2"):
        det = Detector(path, device="cpu")
    assert det.names == ["class0", "class1", "class2"]
    det.close()


def test_y9_info_refuses_with_one_sentence(tmp_path, capsys):
    from y9cli.app import main

    path = _stride8_head(tmp_path / "anchors.onnx")
    with pytest.raises(SystemExit) as exit_info:
        main(["info", str(path)])
    out = capsys.readouterr()
    assert exit_info.value.code == 2
    assert "Traceback" not in out.err + out.out
    (line,) = [ln for ln in out.err.splitlines() if ln.startswith("error: ")]  # (and a note: no digest entry)
    assert line.startswith(f"error: {path}") and "has 64 anchors" in line and "gives 84" in line
