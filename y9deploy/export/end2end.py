"""End-to-end export: NMS appended to the raw graph with the standard ONNX ``NonMaxSuppression`` op.

Semantics are those of the host ``postprocess`` (official ``non_max_suppression`` with ``multi_label=False``,
``agnostic=False``): each anchor keeps only its best class; a box survives when that score is above
``score_threshold``; NMS runs per class (IoU > ``iou_threshold`` suppresses); the ``max_output_boxes`` best
survivors per image are returned, sorted by score.

New inputs (optional: defaults are baked in as initializers; onnxruntime lets a caller override them):
``score_threshold`` float [1], ``iou_threshold`` float [1], ``max_output_boxes`` int64 [1] (at most the
export's ``max_det``). Outputs (fixed size ``max_det``): ``num_dets`` int32 [B, 1], ``boxes`` float32
[B, max_det, 4] (x1, y1, x2, y2 in input pixels), ``scores`` float32 [B, max_det], ``classes`` int32
[B, max_det]. Rows past ``num_dets`` are padding: boxes and scores 0, classes -1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RAW_OUTPUT = "output0"
END2END_OUTPUTS = ("num_dets", "boxes", "scores", "classes")
THRESHOLD_INPUTS = ("score_threshold", "iou_threshold", "max_output_boxes")
MIN_OPSET = 13


def append_nms(
    model: Any,
    *,
    nc: int,
    num_anchors: int,
    conf: float = 0.25,
    iou: float = 0.45,
    max_det: int = 300,
) -> Any:
    """Return a copy of ``model`` (raw output ``output0`` [B, 4 + nc, A]) with NMS and the end2end outputs
    (see the module docstring). The raw output is no longer a graph output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if not 0 <= conf <= 1 or not 0 <= iou <= 1:
        raise ValueError(f"end2end thresholds conf={conf}, iou={iou}: expected values in [0, 1]")
    if max_det < 1:
        raise ValueError(f"end2end max_det={max_det}: expected at least 1")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    raw = next((o for o in g.output if o.name == RAW_OUTPUT), None)
    if raw is None:
        raise ValueError(f"the graph has no output {RAW_OUTPUT!r} to append NMS to")
    raw_type = raw.type.tensor_type.elem_type
    batch_dim = raw.type.tensor_type.shape.dim[0]
    batch = batch_dim.dim_value if batch_dim.HasField("dim_value") else (batch_dim.dim_param or "batch")
    del g.output[:]

    a = int(num_anchors)
    k = min(int(max_det), nc * a)
    nodes: list = []

    def const(name: str, value: np.ndarray) -> str:
        g.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, outputs, name=f"e2e/{outputs[0]}", **attrs))
        return outputs[0]

    # Run-time inputs with baked-in defaults (an initializer of the same name is the default value).
    defaults = {
        "score_threshold": np.array([conf], np.float32),
        "iou_threshold": np.array([iou], np.float32),
        "max_output_boxes": np.array([max_det], np.int64),
    }
    for name, value in defaults.items():
        elem = TensorProto.INT64 if value.dtype == np.int64 else TensorProto.FLOAT
        g.input.append(helper.make_tensor_value_info(name, elem, [1]))
        const(name, value)

    pred = RAW_OUTPUT
    if raw_type != TensorProto.FLOAT:
        pred = node("Cast", [RAW_OUTPUT], ["e2e_pred"], to=TensorProto.FLOAT)
    i64 = np.int64
    box_cxcywh = node(
        "Slice", [pred, const("e2e_s0", np.array([0], i64)), const("e2e_e4", np.array([4], i64)),
                  const("e2e_ax1", np.array([1], i64))], ["e2e_box_cxcywh"],
    )  # fmt: skip
    boxes = node("Transpose", [box_cxcywh], ["e2e_boxes_t"], perm=[0, 2, 1])  # [B, A, 4]
    scores = node(
        "Slice", [pred, "e2e_e4", const("e2e_end", np.array([4 + nc], i64)), "e2e_ax1"], ["e2e_scores"]
    )  # [B, nc, A]
    best = node("ArgMax", [scores], ["e2e_best"], axis=1, keepdims=1)  # [B, 1, A]
    is_best = node(
        "Equal", [best, const("e2e_classes", np.arange(nc, dtype=i64).reshape(1, nc, 1))], ["e2e_is_best"]
    )
    masked = node("Where", [is_best, scores, const("e2e_zero", np.array(0.0, np.float32))], ["e2e_masked"])
    selected = node(
        "NonMaxSuppression",
        [boxes, masked, "max_output_boxes", "iou_threshold", "score_threshold"],
        ["e2e_selected"],
        center_point_box=1,
    )  # [K, 3]: (batch, class, anchor)
    sel_scores = node("GatherND", [masked, selected], ["e2e_sel_scores"])  # [K]
    shape = node("Shape", [masked], ["e2e_shape"])
    base = node(
        "ConstantOfShape",
        [shape],
        ["e2e_base"],
        value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-1.0]),
    )
    dense = node("ScatterND", [base, selected, sel_scores], ["e2e_dense"])  # [B, nc, A], -1 = not kept
    flat = node("Reshape", [dense, const("e2e_flat_shape", np.array([0, -1], i64))], ["e2e_flat"])
    top_vals, top_idx = "e2e_top_vals", "e2e_top_idx"
    nodes.append(
        helper.make_node(
            "TopK", [flat, const("e2e_k", np.array([k], i64))], [top_vals, top_idx], name="e2e/topk",
            axis=1, largest=1, sorted=1,
        )
    )  # fmt: skip
    n_anchor = const("e2e_num_anchors", np.array(a, i64))
    cls = node("Div", [top_idx, n_anchor], ["e2e_cls"])  # integer division: class index
    anchor = node("Mod", [top_idx, n_anchor], ["e2e_anchor"])
    # (cx, cy, w, h) -> (x1, y1, x2, y2), then pick the anchors.
    cxcy = node(
        "Slice",
        [boxes, "e2e_s0", const("e2e_e2", np.array([2], i64)), const("e2e_ax2", np.array([2], i64))],
        ["e2e_cxcy"],
    )
    wh = node("Slice", [boxes, "e2e_e2", "e2e_e4", "e2e_ax2"], ["e2e_wh"])
    half_wh = node("Mul", [wh, const("e2e_half", np.array(0.5, np.float32))], ["e2e_half_wh"])
    x1y1 = node("Sub", [cxcy, half_wh], ["e2e_x1y1"])
    x2y2 = node("Add", [cxcy, half_wh], ["e2e_x2y2"])
    xyxy = node("Concat", [x1y1, x2y2], ["e2e_xyxy"], axis=2)  # [B, A, 4]
    anchor_idx = node("Unsqueeze", [anchor, "e2e_ax2"], ["e2e_anchor_idx"])  # [B, k, 1]
    picked = node("GatherND", [xyxy, anchor_idx], ["e2e_picked"], batch_dims=1)  # [B, k, 4]
    # Valid rows: kept by NMS, and within the run-time max_output_boxes.
    kept = node("Greater", [top_vals, const("e2e_minus_half", np.array(-0.5, np.float32))], ["e2e_kept"])
    in_limit = node(
        "Less",
        [const("e2e_rank", np.arange(k, dtype=i64).reshape(1, k)), "max_output_boxes"],
        ["e2e_in_limit"],
    )
    valid = node("And", [kept, in_limit], ["e2e_valid"])  # [B, k]
    count = node("ReduceSum", [node("Cast", [valid], ["e2e_valid_i64"], to=TensorProto.INT64), "e2e_ax1"],
                 ["e2e_count"], keepdims=1)  # fmt: skip
    node("Cast", [count], ["num_dets"], to=TensorProto.INT32)
    valid3 = node("Unsqueeze", [valid, "e2e_ax2"], ["e2e_valid3"])
    # Rows past the valid ones: boxes and scores 0, classes -1; padded up to max_det when k < max_det.
    extra = max_det - k
    suffix = "_k" if extra else ""
    node("Where", [valid3, picked, "e2e_zero"], ["boxes" + suffix])
    node("Where", [valid, top_vals, "e2e_zero"], ["scores" + suffix])
    minus_one = const("e2e_minus_one", np.array(-1, i64))
    cls_valid = node("Where", [valid, cls, minus_one], ["e2e_cls_valid"])
    if extra:
        node(
            "Pad",
            ["boxes_k", const("e2e_pad3", np.array([0, 0, 0, 0, extra, 0], i64)), "e2e_zero"],
            ["boxes"],
        )
        node("Pad", ["scores_k", const("e2e_pad2", np.array([0, 0, 0, extra], i64)), "e2e_zero"], ["scores"])
        cls_valid = node("Pad", [cls_valid, "e2e_pad2", minus_one], ["e2e_cls_padded"])
    node("Cast", [cls_valid], ["classes"], to=TensorProto.INT32)

    g.node.extend(nodes)
    g.output.extend(
        [
            helper.make_tensor_value_info("num_dets", TensorProto.INT32, [batch, 1]),
            helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [batch, max_det, 4]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batch, max_det]),
            helper.make_tensor_value_info("classes", TensorProto.INT32, [batch, max_det]),
        ]
    )
    return out
