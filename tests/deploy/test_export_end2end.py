"""The end2end NMS graph in onnxruntime against the official NMS results and the host postprocess."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from y9deploy.export.end2end import END2END_OUTPUTS, THRESHOLD_INPUTS, append_nms
from y9deploy.postprocess import postprocess


def _session(batch, nc: int, anchors: int, **kw) -> ort.InferenceSession:
    """A raw "model" (images -> Identity -> output0 [B, 4 + nc, A]) with NMS appended."""
    shape = [batch, 4 + nc, anchors]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["images"], ["output0"])], "raw",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, shape)],
    )  # fmt: skip
    model = append_nms(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
        nc=nc,
        num_anchors=anchors,
        **kw,
    )
    onnx.checker.check_model(model, full_check=True)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _run(sess, pred, **runtime):
    feeds = {"images": pred}
    for name, value in runtime.items():
        dtype = np.int64 if name == "max_output_boxes" else np.float32
        feeds[name] = np.array([value], dtype)
    return dict(zip(END2END_OUTPUTS, sess.run(list(END2END_OUTPUTS), feeds)))


def _assert_rows(out, b: int, rows: np.ndarray, max_det: int) -> None:
    n = int(out["num_dets"][b, 0])
    assert n == len(rows)
    np.testing.assert_allclose(out["boxes"][b, :n], rows[:, :4], rtol=0, atol=1e-4)
    np.testing.assert_array_equal(out["scores"][b, :n], rows[:, 4].astype(np.float32))
    np.testing.assert_array_equal(out["classes"][b, :n], rows[:, 5].astype(np.int32))
    assert out["boxes"].shape[1] == max_det
    assert (
        not out["boxes"][b, n:].any()
        and not out["scores"][b, n:].any()
        and (out["classes"][b, n:] == -1).all()
    )


def test_graph_interface():
    sess = _session("batch", 3, 100, max_det=20)
    assert [i.name for i in sess.get_inputs()] == ["images"]  # the threshold inputs are optional:
    assert [i.name for i in sess.get_overridable_initializers()] == list(
        THRESHOLD_INPUTS
    )  # defaults baked in
    outs = {o.name: (o.shape, o.type) for o in sess.get_outputs()}
    assert outs == {
        "num_dets": (["batch", 1], "tensor(int32)"),
        "boxes": (["batch", 20, 4], "tensor(float)"),
        "scores": (["batch", 20], "tensor(float)"),
        "classes": (["batch", 20], "tensor(int32)"),
    }


def test_matches_official_nms_and_runtime_thresholds(shared):
    """Official non_max_suppression (agnostic=False, multi_label=False) on a crafted prediction [2, 7, 3000]."""
    with np.load(shared("fixtures", "official", "official_nms.npz")) as z:
        ref = {k: z[k] for k in z.files}
    pred = ref["pred"].astype(np.float32)
    sess = _session(2, 3, 3000, conf=0.25, iou=0.45, max_det=300)
    default = _run(sess, pred)  # the baked-in defaults
    for b in range(2):
        _assert_rows(default, b, ref[f"conf0.25_iou0.45_agn0_ml0_b{b}"], 300)
    # new thresholds at run time, same graph: the official result for those thresholds
    other = _run(sess, pred, score_threshold=0.5, iou_threshold=0.3)
    for b in range(2):
        _assert_rows(other, b, ref[f"conf0.5_iou0.3_agn0_ml0_b{b}"], 300)
    assert (other["num_dets"] < default["num_dets"]).all()
    # max_output_boxes at run time: the best 7 of the same result
    capped = _run(sess, pred, max_output_boxes=7)
    for b in range(2):
        _assert_rows(capped, b, ref[f"conf0.25_iou0.45_agn0_ml0_b{b}"][:7], 300)


def _clustered_pred(rng, batch: int, nc: int, anchors: int, size: float = 320) -> np.ndarray:
    """Boxes in clusters (so that NMS suppresses), random class scores."""
    centres = rng.uniform(20, size - 20, (batch, anchors // 8 + 1, 2))
    pick = rng.integers(0, centres.shape[1], (batch, anchors))
    cxy = np.take_along_axis(centres, pick[..., None], 1) + rng.normal(0, 4, (batch, anchors, 2))
    wh = rng.uniform(10, 60, (batch, anchors, 2))
    boxes = np.concatenate([cxy, wh], 2).transpose(0, 2, 1)
    scores = rng.random((batch, nc, anchors)) ** 3
    return np.concatenate([boxes, scores], 1).astype(np.float32)


@pytest.mark.parametrize(("conf", "iou"), [(0.25, 0.45), (0.1, 0.7), (0.6, 0.2)])
def test_matches_host_postprocess(conf, iou):
    pred = _clustered_pred(np.random.default_rng(3), 3, 5, 2000)
    out = _run(_session(3, 5, 2000), pred, score_threshold=conf, iou_threshold=iou)
    host = postprocess(pred, conf=conf, iou=iou, max_det=300)
    assert any(len(r) == 300 for r in host) or conf > 0.25  # the max_det cap is exercised too
    for b in range(3):
        _assert_rows(out, b, host[b], 300)


def test_fewer_candidates_than_max_det_are_padded():
    pred = _clustered_pred(np.random.default_rng(4), 2, 1, 64)
    sess = _session("batch", 1, 64, conf=0.05, iou=0.5, max_det=100)  # 1 x 64 candidates < 100
    out = _run(sess, pred)
    assert out["boxes"].shape == (2, 100, 4) and out["classes"].shape == (2, 100)
    host = postprocess(pred, conf=0.05, iou=0.5, max_det=100)
    for b in range(2):
        _assert_rows(out, b, host[b], 100)
    single = _run(sess, pred[:1])  # dynamic batch
    np.testing.assert_array_equal(single["boxes"][0], out["boxes"][0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="thresholds conf=1.5"):
        _session(1, 3, 10, conf=1.5)
    with pytest.raises(ValueError, match="max_det=0"):
        _session(1, 3, 10, max_det=0)
