"""Bad input to the Detector: each raises ONE clear error (a full sentence naming the value and what was
expected), and the Detector keeps working afterwards. (An engine built for another GPU: test_backends_tensorrt.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx
from y9core.errors import ModelFileError
from y9deploy import Detector


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    path = export_tiny_onnx(tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(64, 64))
    with Detector(path, conf=0.5) as d:
        yield d


def _sentence(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) > 30 and text.rstrip(")").endswith("."), text
    return text


@pytest.mark.parametrize(
    "source,error,words",
    [
        (None, TypeError, "None"),
        (np.zeros((48, 64), np.uint8), ValueError, "grayscale"),
        (np.zeros((48, 64, 4), np.uint8), ValueError, "4 channels"),
        (np.zeros((48, 64, 3), np.float64), TypeError, "float64"),
        ([], ValueError, "empty"),
        (np.zeros((0, 0, 3), np.uint8), ValueError, "empty"),
        (np.zeros((0, 48, 64, 3), np.uint8), ValueError, "empty batch"),
        (Path("/nonexistent/frame.jpg"), FileNotFoundError, "/nonexistent/frame.jpg"),
        ("/nonexistent/frame.jpg", FileNotFoundError, "does not exist"),
        ([np.zeros((8, 8, 3), np.uint8), None], TypeError, "frame 1"),
        (12, TypeError, "int"),
    ],
)
def test_bad_frames(det, source, error, words):
    with pytest.raises(error) as info:
        det.predict(source)
    assert words in _sentence(info.value)
    assert len(det.predict(np.zeros((48, 64, 3), np.uint8))) >= 0  # still works


def test_unreadable_image_file(det, tmp_path):
    bad = tmp_path / "not_an_image.jpg"
    bad.write_bytes(b"this is text, not a JPEG")
    with pytest.raises(ValueError, match="cannot be decoded as an image") as info:
        det.predict(bad)
    assert str(bad) in _sentence(info.value)
    with pytest.raises(IsADirectoryError, match=f"image {tmp_path} is a folder; expected a file"):
        det.predict(tmp_path)


@pytest.mark.parametrize("suffix", [".onnx", ".pt"])
def test_corrupt_model_file(tmp_path, suffix):
    if suffix == ".pt":
        pytest.importorskip("torch")
    bad = tmp_path / f"model{suffix}"
    bad.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(ModelFileError) as info:
        Detector(bad)
    assert str(bad) in str(info.value)


def test_model_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Detector(tmp_path / "missing.onnx")
    with pytest.raises(FileNotFoundError, match="missing.engine"):
        Detector(tmp_path / "missing.engine")
    (tmp_path / "model.tflite").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"'\.tflite'.*\.engine.*\.onnx.*\.pt") as info:
        Detector(tmp_path / "model.tflite")
    _sentence(info.value)
    with pytest.raises(TypeError, match="path"):
        Detector(123)  # (None, or no argument, is the embedded model: tests/deploy/test_embedded_model.py)
    (tmp_path / "dir.onnx").mkdir()
    with pytest.raises(IsADirectoryError, match="dir.onnx is a folder; expected a .engine, .onnx or .pt file"):
        Detector(tmp_path / "dir.onnx")


def test_onnx_that_is_not_a_y9_model(tmp_path):
    """A valid ONNX file with no image input: refused with a sentence, not a crash deep in the runtime."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    )  # fmt: skip
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ModelFileError, match="no 4-D image input"):
        Detector(path)


def test_test_data_still_predicts(det):
    assert isinstance(det.predict(TEST_DATA / "000000000036.jpg").xyxy, np.ndarray)


def test_gpu_processing_on_the_host_is_refused_not_quietly_replaced(det):
    """``postprocess='gpu'`` where the outputs come to the host (here a CPU backend) is refused as
    ``preprocess='gpu'`` is, instead of running the host implementation under the GPU's name."""
    for option in ("preprocess", "postprocess"):
        with pytest.raises(ValueError, match=f"{option}='gpu'") as err:
            Detector(det.backend.path, device="cpu", **{option: "gpu"})
        _sentence(err.value)
    with Detector(det.backend.path, device="cpu", postprocess="cpu") as host:
        assert host.choice()["postprocess"] == "host"
