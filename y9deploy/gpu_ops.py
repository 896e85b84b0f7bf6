"""Pre/post-processing on torch tensors (CUDA or CPU): the GPU paths of ``prepare`` and ``postprocess``.

torch is imported inside the functions: importing this module needs numpy and OpenCV only.
No torchvision: the NMS is written with torch ops (block IoU matrices and a fixed-point greedy pass).

``prepare_torch`` vs ``preprocess.prepare`` (cv2 INTER_LINEAR): both sample the source at the same
half-pixel-centred positions with bilinear weights and no antialiasing. cv2 works on uint8 with 11-bit
fixed-point weights; torch interpolates in float32, rounded here half up to whole grey levels like cv2. Result
(measured on CPU tensors): identical blobs for frames that need no resize and for integer downscale factors
(1920x1080, 1280x720, 3840x2160 -> 640); otherwise at most one grey level (1/255) apart on ~2-12% of the
pixels (fractional factors, upscaling). On CUDA the float arithmetic may round a few more pixels differently,
still within one grey level.

``postprocess_torch`` equals ``postprocess.postprocess`` bit for bit on CPU tensors (same float32 operations in
the same order, same stable ordering of ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from y9deploy.nms import MAX_WH, threshold_below
from y9deploy.postprocess import MAX_NMS, _check_classes, _check_thresholds
from y9deploy.preprocess import LetterboxInfo, Shape, _fill_value, letterbox_info

if TYPE_CHECKING:
    import torch

#: Candidates resolved together by the torch NMS (an IoU block of BLOCK x BLOCK): CPU tensors, CUDA tensors.
BLOCK = 256
BLOCK_CUDA = 1024


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        from y9core.errors import BackendUnavailableError

        raise BackendUnavailableError(
            "torch is not installed; y9deploy.gpu_ops needs it (use y9deploy.preprocess/postprocess on the host)."
        ) from e
    return torch


# ----------------------------------------------------------------------------------------------------------
# Pre-processing
# ----------------------------------------------------------------------------------------------------------


def _as_frames(frames: Any, device: Any) -> list[torch.Tensor]:
    """Tensors/ndarrays [H, W, 3] uint8, a [B, H, W, 3] tensor or a sequence -> list of [H, W, 3] tensors."""
    torch = _torch()
    if isinstance(frames, (torch.Tensor, np.ndarray)):
        frames = list(frames) if frames.ndim == 4 else [frames]
    if frames is None or isinstance(frames, (str, bytes)) or not isinstance(frames, Sequence):
        raise TypeError(
            f"frames is a {type(frames).__name__}; expected HxWx3 uint8 tensors or a list of them."
        )
    if len(frames) == 0:
        raise ValueError("frames is empty; expected at least one HxWx3 uint8 image.")
    out = []
    for i, f in enumerate(frames):
        if isinstance(f, np.ndarray):
            from y9deploy.preprocess import check_frame

            f = torch.from_numpy(np.ascontiguousarray(check_frame(f, i)))
        if f is None:
            raise TypeError(f"frame {i} is None; expected an HxWx3 uint8 BGR tensor (did the read fail?).")
        if not isinstance(f, torch.Tensor):
            raise TypeError(f"frame {i} is a {type(f).__name__}; expected an HxWx3 uint8 tensor.")
        if f.dtype != torch.uint8:
            raise TypeError(f"frame {i} has dtype {f.dtype}; expected an HxWx3 uint8 BGR tensor.")
        if f.ndim != 3 or f.shape[2] != 3 or f.shape[0] == 0 or f.shape[1] == 0:
            raise ValueError(f"frame {i} has shape {tuple(f.shape)}; expected an HxWx3 uint8 BGR tensor.")
        out.append(f if device is None else f.to(device, non_blocking=True))
    return out


def prepare_torch(
    frames: Any,
    imgsz: Shape = 640,
    *,
    dtype: Any = None,
    device: Any = None,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
    color: int | tuple[int, int, int] = 114,
) -> tuple[torch.Tensor, list[LetterboxInfo]]:
    """Letterbox + BGR->RGB + HWC->CHW + /255 on the frames' device (the GPU path of ``prepare``).

    Args:
        frames: a uint8 BGR tensor [H, W, 3] or [B, H, W, 3], or a sequence of [H, W, 3] tensors/ndarrays
            (sizes may differ; ndarrays are uploaded to ``device``).
        imgsz: network input ``(h, w)`` or a square side.
        dtype: ``torch.float16`` (default) or ``torch.float32``.
        device: where to compute (default: the first frame's device).
        auto, scaleup, stride, color: as ``letterbox``.
    Returns:
        ``(blob, infos)``: blob Tensor[B, 3, H, W] RGB 0..1 of dtype on the device, one ``LetterboxInfo``
        per frame (same geometry as ``prepare``).
    """
    torch = _torch()
    import torch.nn.functional as F

    dtype = torch.float16 if dtype is None else dtype
    if dtype not in (torch.float16, torch.float32):
        raise TypeError(f"dtype is {dtype}; expected torch.float16 or torch.float32.")
    frames = _as_frames(frames, device)
    dev = frames[0].device
    fill = _fill_value(color)
    infos = [
        letterbox_info(tuple(f.shape[:2]), imgsz, auto=auto, scaleup=scaleup, stride=stride) for f in frames
    ]
    if len({i.out_hw for i in infos}) != 1:
        raise ValueError("auto=True gave different input shapes for the frames of one batch; use auto=False.")
    oh, ow = infos[0].out_hw
    blob = torch.empty((len(frames), 3, oh, ow), dtype=dtype, device=dev)
    pad = torch.tensor([fill[2], fill[1], fill[0]], dtype=torch.float32, device=dev).div_(255).to(dtype)
    for k, (f, info) in enumerate(zip(frames, infos)):
        (rw, rh), (left, top) = info.resized_wh, info.offset
        if min(rw, rh) < 1:
            raise ValueError(f"frame {k} has shape {tuple(f.shape)}, too thin to letterbox into {(oh, ow)}.")
        x = f.permute(2, 0, 1).flip(0).unsqueeze(0).float()  # [1, 3, H, W] RGB 0..255
        if (rh, rw) != tuple(f.shape[:2]):
            x = F.interpolate(x, size=(rh, rw), mode="bilinear", align_corners=False, antialias=False)
            x = x.add_(0.5).floor_().clamp_(0, 255)  # whole grey levels, rounded half up like cv2
        if (rh, rw) != (oh, ow):
            blob[k] = pad[:, None, None]
        blob[k, :, top : top + rh, left : left + rw] = x[0].div_(255)
    return blob, infos


# ----------------------------------------------------------------------------------------------------------
# Post-processing
# ----------------------------------------------------------------------------------------------------------


def box_iou_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IoU of every pair: a Tensor[N, 4] xyxy, b Tensor[M, 4] xyxy -> Tensor[N, M] (same formula as nms.box_iou)."""
    torch = _torch()
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    w = (torch.minimum(a[:, None, 2], b[None, :, 2]) - torch.maximum(a[:, None, 0], b[None, :, 0])).clamp_(
        min=0
    )
    h = (torch.minimum(a[:, None, 3], b[None, :, 3]) - torch.maximum(a[:, None, 1], b[None, :, 1])).clamp_(
        min=0
    )
    inter = w * h
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def nms_sorted_torch(boxes: torch.Tensor, iou_thres: float, max_det: int | None = None) -> torch.Tensor:
    """Greedy NMS of boxes Tensor[N, 4] ALREADY sorted by descending score -> Tensor[K] int64 positions.

    Blocks of ``BLOCK`` boxes: cleared against the boxes kept so far, then resolved as the fixed point of
    ``keep[j] = alive[j] and not any(keep[i] and iou[i, j] > t, i < j)`` (reached in at most depth + 1 passes
    of a boolean matrix product; each pass is one device sync).
    """
    torch = _torch()
    n = boxes.shape[0]
    limit = n if max_det is None else int(max_det)
    thr = float(threshold_below(iou_thres))
    kept: list[torch.Tensor] = []
    kept_boxes = boxes[:0]
    total = 0
    size = BLOCK_CUDA if boxes.is_cuda else BLOCK
    for start in range(0, n, size):
        if total >= limit:
            break
        blk = boxes[start : start + size]
        if total:
            alive = ~(box_iou_torch(kept_boxes, blk) > thr).any(0)
        else:
            alive = torch.ones(blk.shape[0], dtype=torch.bool, device=boxes.device)
        over = torch.triu(box_iou_torch(blk, blk) > thr, diagonal=1)
        keep = alive
        for _ in range(blk.shape[0] + 1):
            new = alive & ~(over & keep[:, None]).any(0)
            if torch.equal(new, keep):
                break
            keep = new
        idx = torch.nonzero(keep).squeeze(1)[: limit - total]
        kept.append(idx + start)
        kept_boxes = torch.cat([kept_boxes, blk[idx]])
        total += int(idx.numel())
    if not kept:
        return torch.zeros(0, dtype=torch.int64, device=boxes.device)
    return torch.cat(kept)


def postprocess_torch(
    pred: torch.Tensor,
    *,
    conf: float | Sequence[float] = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    multi_label: bool = False,
    max_det: int = 300,
    classes: Sequence[int] | None = None,
    max_nms: int = MAX_NMS,
) -> list[torch.Tensor]:
    """Raw head output on the device -> detections per image (same semantics and results as ``postprocess``).

    Args:
        pred (Tensor[B, 4+nc, A]): (cx, cy, w, h) then nc class scores; computed in float32.
        conf, iou, agnostic, multi_label, max_det, classes, max_nms: as ``postprocess.postprocess``.
    Returns:
        list of B Tensor[N, 6] float32 on pred's device: (x1, y1, x2, y2, score, class) in input pixels,
        by descending score.
    """
    torch = _torch()
    if not isinstance(pred, torch.Tensor):
        raise TypeError(f"pred is a {type(pred).__name__}; expected a torch.Tensor [B, 4+nc, A].")
    if pred.ndim != 3 or pred.shape[1] < 5:
        raise ValueError(
            f"pred has shape {tuple(pred.shape)}; expected [B, 4+nc, A] with at least one class."
        )
    if int(max_det) < 1:
        raise ValueError(f"max_det is {max_det!r}; expected a positive number of detections.")
    pred = pred.float()
    nc, dev = pred.shape[1] - 4, pred.device
    thr = _check_thresholds(conf, iou, nc)
    per_class = thr.ndim == 1
    conf_t = torch.as_tensor(thr, device=dev)
    low = conf_t.min()
    class_ids = _check_classes(classes, nc)
    ids_t = None if class_ids is None else torch.as_tensor(class_ids, device=dev)
    out = []
    for p in pred:
        scores_all = p[4:]
        best, best_cls = scores_all.max(0)
        cand = torch.nonzero(best > low).squeeze(1)
        if multi_label and nc > 1:
            sub = scores_all[:, cand].T
            i, j = torch.nonzero(sub > conf_t).T
            anchors, scores, cls = cand[i], sub[i, j], j
        else:
            scores, cls = best[cand], best_cls[cand]
            if per_class:
                ok = scores > conf_t[cls]
                cand, scores, cls = cand[ok], scores[ok], cls[ok]
            anchors = cand
        if ids_t is not None:
            ok = torch.isin(cls, ids_t)
            anchors, scores, cls = anchors[ok], scores[ok], cls[ok]
        if scores.numel() == 0:
            out.append(torch.zeros((0, 6), dtype=torch.float32, device=dev))
            continue
        order = torch.sort(scores, descending=True, stable=True).indices[:max_nms]
        anchors, scores, cls = anchors[order], scores[order], cls[order]
        xywh = p[:4, anchors]
        hw, hh = xywh[2] / 2, xywh[3] / 2
        boxes = torch.stack([xywh[0] - hw, xywh[1] - hh, xywh[0] + hw, xywh[1] + hh], 1)
        clsf = cls.float()
        if agnostic:
            shifted = boxes
        else:
            span = boxes.max() - torch.clamp(boxes.min(), max=0)
            offset = torch.where(span >= MAX_WH, torch.ceil(span + 1), torch.full_like(span, MAX_WH))
            shifted = boxes + (clsf * offset)[:, None]
        keep = nms_sorted_torch(shifted, iou, max_det)
        out.append(torch.cat([boxes[keep], scores[keep, None], clsf[keep, None]], 1))
    return out


def scale_boxes_torch(boxes: torch.Tensor, info: LetterboxInfo, clip: bool = True) -> torch.Tensor:
    """``preprocess.scale_boxes`` for a Tensor[N, 4+K] (first four columns xyxy in input pixels); a new tensor."""
    out = boxes.float().clone()
    (h0, w0), (left, top) = info.in_hw, info.offset
    sx, sy = w0 / info.resized_wh[0], h0 / info.resized_wh[1]
    out[:, [0, 2]] = (out[:, [0, 2]] - left) * sx
    out[:, [1, 3]] = (out[:, [1, 3]] - top) * sy
    if clip:
        out[:, [0, 2]] = out[:, [0, 2]].clamp(0, w0)
        out[:, [1, 3]] = out[:, [1, 3]].clamp(0, h0)
    return out


def letterbox_batch_torch(
    frames: Any,
    imgsz: tuple[int, int],
    *,
    dtype: Any,
    scaleup: bool = True,
    stride: int = 32,
    color: Any = 114,
) -> tuple[Any, list[Any]]:
    """``gpu_ops.prepare_torch`` for a batch of same-size frames in one pass (a handful of kernels for the whole
    batch instead of a handful per frame): the same operations on a [B, ...] tensor, so the same values.

    Args:
        frames (Tensor[B, H, W, 3] uint8 BGR) on the device.
    Returns:
        ``(blob Tensor[B, 3, h, w] RGB 0..1 of dtype, [LetterboxInfo] * B)``.
    """
    import torch
    import torch.nn.functional as F

    from y9deploy.preprocess import _fill_value, letterbox_info

    b, h0, w0, _ = frames.shape
    info = letterbox_info((int(h0), int(w0)), imgsz, scaleup=scaleup, stride=stride)
    (rw, rh), (left, top) = info.resized_wh, info.offset
    oh, ow = info.out_hw
    if min(rw, rh) < 1:
        raise ValueError(f"frames of shape {(int(h0), int(w0))} are too thin to letterbox into {(oh, ow)}.")
    fill = _fill_value(color)
    x = frames.permute(0, 3, 1, 2).flip(1).float()  # [B, 3, H, W] RGB 0..255
    if (rh, rw) != (int(h0), int(w0)):
        x = F.interpolate(x, size=(rh, rw), mode="bilinear", align_corners=False, antialias=False)
        x = x.add_(0.5).floor_().clamp_(0, 255)  # whole grey levels, rounded half up like cv2
    blob = torch.empty((int(b), 3, oh, ow), dtype=dtype, device=frames.device)
    if (rh, rw) != (oh, ow):
        pad = torch.tensor([fill[2], fill[1], fill[0]], dtype=torch.float32, device=frames.device).div_(255)
        blob[:] = pad.to(dtype)[None, :, None, None]
    blob[:, :, top : top + rh, left : left + rw] = x.div_(255)
    return blob, [info] * int(b)
