"""INT8 (issue 55): which nodes the default rule keeps in float, and the averaged activation ranges.

The rule is read on the embedded model's FP32 export (no quantization: fast); the averaged ranges are checked on a
one-convolution model against the range computed here from the calibration images (mean over images of each image's
min and max, against the plain min and max).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")


def test_default_rule_keeps_the_stem_and_the_head_in_float(embedded_export):
    import onnx

    from y9deploy.int8.rule import DEFAULT_KEEP, KeepFloat, float_nodes, head_split, stem_nodes

    model = onnx.load(str(embedded_export(imgsz=160)))
    by_name = {n.name: n for n in model.graph.node}
    stem = stem_nodes(model)
    first = [by_name[s] for s in stem if by_name[s].op_type == "Conv"]
    assert len(first) == 1 and first[0].input[0] == model.graph.input[0].name  # the conv that reads the image
    act = sorted(by_name[s].op_type for s in stem if by_name[s].op_type != "Conv")
    assert act == ["Mul", "Sigmoid"]  # its SiLU, nothing past it
    assert all(first[0].output[0] in by_name[s].input for s in stem if by_name[s].op_type == "Sigmoid")
    decode, last = head_split(model)
    assert not set(stem) & set(decode + last)
    assert DEFAULT_KEEP is KeepFloat.stem
    assert float_nodes(model) == decode + last + stem
    assert float_nodes(model, "head") == decode + last and float_nodes(model, "none") == []


def test_stem_of_a_graph_without_an_input_conv_is_one_sentence():
    from onnx import TensorProto, helper

    from y9deploy.int8.rule import stem_nodes

    graph = helper.make_graph([helper.make_node("Relu", ["images"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])])  # fmt: skip
    with pytest.raises(ValueError, match=r"^the ONNX graph has no convolution reading its input; expected a y9"):
        stem_nodes(helper.make_model(graph))


def _input_scale(model) -> float:
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    (q,) = [n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "images"]
    return float(inits[q.input[1]])


@pytest.mark.parametrize("method", ["minmax", "average"])
def test_activation_range_is_the_min_max_or_its_mean_over_images(method):
    pytest.importorskip("onnxruntime.quantization")
    from onnx import TensorProto, helper, numpy_helper

    from y9deploy.int8.quantize import quantize_qdq

    w = numpy_helper.from_array(np.full((2, 1, 1, 1), 0.5, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["images", "w"], ["y"], name="c")], "g",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], [w])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(3)
    blobs = rng.uniform(0.0, 1.0, (6, 1, 4, 4)).astype(np.float32)
    blobs[:, 0, 0, 0] = 0.0  # every image holds 0: the UINT8 range is [0, max]
    blobs[2, 0, 1, 1] = 9.0  # one outlier
    peaks = blobs.reshape(6, -1).max(1).astype(np.float64)
    out = quantize_qdq(model, blobs, batch=1, exclude=[], method=method)
    want = (peaks.mean() if method == "average" else peaks.max()) / 255
    assert _input_scale(out) == pytest.approx(want, rel=1e-5)


def _run(model, feed: dict) -> list:
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)


def test_the_embedded_models_average_pools_become_equal_depthwise_convolutions(embedded_export):
    pytest.importorskip("onnxruntime")
    import onnx

    from y9deploy.int8.pool_conv import pools_as_convs

    model = onnx.load(str(embedded_export(imgsz=160)))
    pools = [n.name for n in model.graph.node if n.op_type == "AveragePool"]
    out, done = pools_as_convs(model)
    assert len(pools) == 5 and done == pools  # gelan-s: one per ADown
    by_name = {n.name: n for n in out.graph.node}
    assert all(by_name[p].op_type == "Conv" for p in done)
    assert "AveragePool" not in {n.op_type for n in out.graph.node}
    assert any(n.op_type == "AveragePool" for n in model.graph.node)  # the input is left as it was
    x = np.random.default_rng(0).random((1, 3, 160, 160), dtype=np.float32)
    (want,), (got,) = _run(model, {"images": x}), _run(out, {"images": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)  # boxes in pixels, scores in [0, 1]


@pytest.mark.parametrize(("pads", "count_include_pad", "ceil_mode", "dilations", "rewritten"),
                         [([0, 0, 0, 0], 0, 0, [1, 1], True), ([1, 1, 1, 1], 1, 0, [1, 1], True),
                          ([1, 1, 1, 1], 0, 0, [1, 1], False), ([0, 0, 0, 0], 0, 1, [1, 1], False),
                          ([0, 0, 0, 0], 0, 0, [2, 1], False)])  # fmt: skip
def test_a_pool_becomes_a_convolution_only_where_it_is_one(pads, count_include_pad, ceil_mode, dilations, rewritten):
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from y9deploy.int8.pool_conv import pools_as_convs

    pool = helper.make_node("AveragePool", ["images"], ["y"], name="p", kernel_shape=[3, 2], strides=[2, 1],
                            pads=pads, count_include_pad=count_include_pad, ceil_mode=ceil_mode,
                            dilations=dilations)  # fmt: skip
    graph = helper.make_graph([pool], "g", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 4, 7, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])  # 19: pools take dilations
    out, done = pools_as_convs(model)
    assert done == (["p"] if rewritten else [])
    assert out.graph.node[0].op_type == ("Conv" if rewritten else "AveragePool")
    x = np.random.default_rng(1).normal(size=(1, 4, 7, 6)).astype(np.float32)
    np.testing.assert_allclose(_run(out, {"images": x})[0], _run(model, {"images": x})[0], rtol=1e-6, atol=1e-6)
