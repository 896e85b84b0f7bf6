"""Test support for the runtime tests: a tiny y9-layout network exported to ONNX, a slow reference
detector pipeline and a planted-object detector. Comparisons of real networks across backends use the embedded
trained model (tests/deploy/embedded.py).

The tiny net has the I/O names and metadata layout of a y9 export (``y9deploy.export.metadata``): input ``images``
[B, 3, H, W] RGB 0..1, output ``output0`` [B, 4 + nc, A] (cx, cy, w, h in input pixels, then sigmoid class
scores over the anchors of strides 8/16/32, row-major per level).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

STRIDES = (8, 16, 32)


def tiny_net(nc: int = 3, seed: int = 0):
    """A small deterministic torch module with the y9 eval-mode output layout."""
    import torch
    from torch import nn

    class TinyYolo(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.nc = nc
            self.stem = nn.Sequential(
                nn.Conv2d(3, 8, 3, 2, 1),
                nn.SiLU(),
                nn.Conv2d(8, 16, 3, 2, 1),
                nn.SiLU(),
                nn.Conv2d(16, 16, 3, 2, 1),
                nn.SiLU(),
            )
            self.down1 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.SiLU())
            self.down2 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.SiLU())
            self.heads = nn.ModuleList(nn.Conv2d(16, 4 + nc, 1) for _ in STRIDES)
            for p in self.parameters():
                p.data = torch.randn(p.shape, generator=g) * (
                    0.6 / max(1, p[0].numel()) ** 0.5 if p.ndim > 1 else 0.1
                )

        def forward(self, x):
            f8 = self.stem(x)
            f16 = self.down1(f8)
            f32 = self.down2(f16)
            outs = []
            for feat, head, s in zip((f8, f16, f32), self.heads, STRIDES):
                o = head(feat)
                b, _, h, w = o.shape
                gy, gx = torch.meshgrid(
                    torch.arange(h, dtype=o.dtype), torch.arange(w, dtype=o.dtype), indexing="ij"
                )
                cx = (gx + 0.5 + torch.tanh(o[:, 0])) * s
                cy = (gy + 0.5 + torch.tanh(o[:, 1])) * s
                bw = torch.sigmoid(o[:, 2]) * s * 6
                bh = torch.sigmoid(o[:, 3]) * s * 6
                cls = torch.sigmoid(o[:, 4:] * 40)
                level = torch.cat([cx[:, None], cy[:, None], bw[:, None], bh[:, None], cls], 1)
                outs.append(level.reshape(b, 4 + self.nc, h * w))
            return torch.cat(outs, 2)

    return TinyYolo().eval()


def y9_metadata(
    names: list[str],
    imgsz: tuple[int, int],
    *,
    end2end: bool = False,
    dynamic_batch: bool = False,
    half: bool = False,
    model: str = "tiny",
) -> dict[str, str]:
    return {
        "names": json.dumps(names),
        "stride": json.dumps(list(STRIDES)),
        "imgsz": json.dumps(list(imgsz)),
        "letterbox": json.dumps({"auto": False, "scaleup": True, "color": 114, "stride": 32}),
        "model": model,
        "source_sha256": "0" * 64,
        "y9_version": "test",
        "end2end": "1" if end2end else "0",
        "dynamic_batch": "1" if dynamic_batch else "0",
        "half": "1" if half else "0",
    }


def export_tiny_onnx(
    path: Path,
    *,
    nc: int = 3,
    imgsz: tuple[int, int] = (96, 128),
    batch: int = 1,
    dynamic_batch: bool = False,
    seed: int = 0,
) -> Path:
    """Export ``tiny_net`` to ``path`` with y9 I/O names and metadata; returns ``path``."""
    import onnx
    import torch

    net = tiny_net(nc, seed)
    x = torch.zeros(batch, 3, *imgsz)
    torch.onnx.export(
        net,
        (x,),
        str(path),
        input_names=["images"],
        output_names=["output0"],
        opset_version=17,
        dynamo=False,
        dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}} if dynamic_batch else None,
    )
    model = onnx.load(str(path))
    for k, v in y9_metadata([f"c{i}" for i in range(nc)], imgsz, dynamic_batch=dynamic_batch).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(model, str(path))
    return path


# ------------------------------------------------------------------------------------------ slow reference
def reference_nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> list[int]:
    """Greedy NMS, one box at a time (stable order on equal scores)."""
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
    keep: list[int] = []
    for i in order:
        ok = True
        for j in keep:
            xx1, yy1 = max(boxes[i, 0], boxes[j, 0]), max(boxes[i, 1], boxes[j, 1])
            xx2, yy2 = min(boxes[i, 2], boxes[j, 2]), min(boxes[i, 3], boxes[j, 3])
            inter = max(0.0, xx2 - xx1) * max(0.0, yy2 - yy1)
            a = (boxes[i, 2] - boxes[i, 0]) * (boxes[i, 3] - boxes[i, 1])
            b = (boxes[j, 2] - boxes[j, 0]) * (boxes[j, 3] - boxes[j, 1])
            if inter / (a + b - inter + 1e-12) > iou:
                ok = False
                break
        if ok:
            keep.append(i)
    return keep


def reference_letterbox(
    frame: np.ndarray, hw: tuple[int, int]
) -> tuple[np.ndarray, tuple[int, int], tuple[int, int]]:
    """cv2 resize + constant border; returns (image, (resized_w, resized_h), (left, top))."""
    h0, w0 = frame.shape[:2]
    r = min(hw[0] / h0, hw[1] / w0)
    nw, nh = int(round(w0 * r)), int(round(h0 * r))
    img = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR) if (nw, nh) != (w0, h0) else frame
    dw, dh = (hw[1] - nw) / 2, (hw[0] - nh) / 2
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    return img, (nw, nh), (left, top)


def reference_detect(session, frame: np.ndarray, hw: tuple[int, int], conf: float, iou: float):
    """The whole pipeline, slowly: letterbox, RGB/CHW/255, onnxruntime, per-class greedy NMS, boxes back.

    Boxes go back to the frame through the resize actually applied (``x = (x' - left) * w / resized_w``), the
    convention of ``y9deploy.preprocess.scale_boxes``.
    Returns (xyxy ndarray[N, 4] in frame pixels, scores ndarray[N], classes ndarray[N]) by descending score.
    """
    img, (nw, nh), (left, top) = reference_letterbox(frame, hw)
    x = img[:, :, ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255
    pred = session.run(None, {"images": x})[0][0]  # [4+nc, A]
    boxes, scores, classes = [], [], []
    for a in range(pred.shape[1]):
        s = pred[4:, a]
        c = int(np.argmax(s))
        if s[c] > conf:
            cx, cy, w, h = pred[:4, a]
            boxes.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
            scores.append(s[c])
            classes.append(c)
    boxes_a = np.array(boxes, np.float32).reshape(-1, 4)
    scores_a, classes_a = np.array(scores, np.float32), np.array(classes, np.int64)
    keep = []
    for c in sorted(set(classes)):
        idx = np.flatnonzero(classes_a == c)
        keep += [int(idx[k]) for k in reference_nms(boxes_a[idx], scores_a[idx], iou)]
    keep = sorted(keep, key=lambda i: -float(scores_a[i]))
    out = boxes_a[keep].copy()
    h0, w0 = frame.shape[:2]
    out[:, [0, 2]] = ((out[:, [0, 2]] - left) * (w0 / nw)).clip(0, w0)
    out[:, [1, 3]] = ((out[:, [1, 3]] - top) * (h0 / nh)).clip(0, h0)
    return out, scores_a[keep], classes_a[keep]


# ------------------------------------------------------------------------------------------ planted objects
def export_blob_onnx(path: Path, *, imgsz: tuple[int, int] = (320, 320)) -> Path:
    """A hand-weighted one-class detector of bright squares, exported like a y9 model (dynamic batch).

    At each stride-8 cell: score = sigmoid(30 * (mean brightness of the 16x16 window - 0.8)), so only a bright
    object at least ~16 px wide at the network's input scores; the box is the brightness centroid and
    sqrt(bright area) of the 32x32 window. A 24 px square is found exactly at native scale and missed once a
    frame is downscaled by 3x or more: what tiled inference is for.
    """
    import onnx
    import torch
    import torch.nn.functional as F
    from torch import nn

    h, w = imgsz

    class BlobNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
            self.register_buffer("xs", xs[None, None].float())
            self.register_buffer("ys", ys[None, None].float())

        def forward(self, x):
            g = x.mean(1, keepdim=True)
            p16 = F.avg_pool2d(g, 16, stride=8, padding=4)
            area = F.avg_pool2d(g, 32, stride=8, padding=12) * 1024
            cx = F.avg_pool2d(g * self.xs, 32, stride=8, padding=12) * 1024 / (area + 1e-6)
            cy = F.avg_pool2d(g * self.ys, 32, stride=8, padding=12) * 1024 / (area + 1e-6)
            side = torch.sqrt(area)
            score = torch.sigmoid(30 * (p16 - 0.8))
            return torch.cat([cx, cy, side, side, score], 1).flatten(2)

    torch.onnx.export(BlobNet().eval(), (torch.zeros(1, 3, h, w),), str(path), input_names=["images"],
                      output_names=["output0"], opset_version=17, dynamo=False,
                      dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}})  # fmt: skip
    model = onnx.load(str(path))
    for k, v in y9_metadata(["square"], imgsz, dynamic_batch=True, model="blob").items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(model, str(path))
    return path


def planted_squares(
    hw: tuple[int, int], n: int, *, side: int = 24, seed: int = 0, gap: int = 48
) -> tuple[np.ndarray, np.ndarray]:
    """A dark noisy frame with ``n`` white squares of ``side`` px, at least ``gap`` px apart ->
    (frame ndarray[H, W, 3] uint8, ground-truth boxes ndarray[n, 4] x1, y1, x2, y2)."""
    rng = np.random.default_rng(seed)
    frame = rng.integers(0, 12, (*hw, 3), dtype=np.uint8)
    boxes: list[list[int]] = []
    while len(boxes) < n:
        x, y = int(rng.integers(0, hw[1] - side)), int(rng.integers(0, hw[0] - side))
        if all(abs(x - b[0]) > side + gap or abs(y - b[1]) > side + gap for b in boxes):
            boxes.append([x, y, x + side, y + side])
            frame[y : y + side, x : x + side] = 255
    return frame, np.array(boxes, np.float32)
