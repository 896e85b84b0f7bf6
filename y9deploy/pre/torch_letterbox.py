"""The GPU letterbox: letterbox, colour, layout and normalisation on torch tensors (CUDA or CPU).

torch is imported inside the functions: importing this module needs numpy and OpenCV only.

``prepare_torch`` vs ``pre.host.prepare`` (cv2 INTER_LINEAR): both sample the source at the same
half-pixel-centred positions with bilinear weights and no antialiasing. cv2 works on uint8 with 11-bit
fixed-point weights; torch interpolates in float32, rounded here half up to whole grey levels like cv2. Result
(checked on CPU tensors by the tests): identical blobs for frames that need no resize and for integer
downscale factors (1920x1080, 1280x720, 3840x2160 -> 640); otherwise at most one grey level (1/255) apart on a
small share of the pixels (fractional factors, upscaling). On CUDA the float arithmetic may round a few more
pixels differently, still within one grey level.

``letterbox_batch_torch`` does a batch of same-size frames in one pass, with the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from y9core.letterbox import LetterboxInfo, Shape, letterbox_info
from y9deploy.pre.host import check_frame, fill_value

if TYPE_CHECKING:
    import torch


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        from y9core.errors import BackendUnavailableError

        raise BackendUnavailableError(
            "torch is not installed; y9deploy.pre.torch_letterbox needs it (use y9deploy.pre.host on the host)."
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
    fill = fill_value(color)
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


def letterbox_batch_torch(
    frames: Any,
    imgsz: tuple[int, int],
    *,
    dtype: Any,
    scaleup: bool = True,
    stride: int = 32,
    color: Any = 114,
) -> tuple[Any, list[Any]]:
    """``prepare_torch`` for a batch of same-size frames in one pass (a handful of kernels for the whole
    batch instead of a handful per frame): the same operations on a [B, ...] tensor, so the same values.

    Args:
        frames (Tensor[B, H, W, 3] uint8 BGR) on the device.
    Returns:
        ``(blob Tensor[B, 3, h, w] RGB 0..1 of dtype, [LetterboxInfo] * B)``.
    """
    torch = _torch()
    import torch.nn.functional as F

    b, h0, w0, _ = frames.shape
    info = letterbox_info((int(h0), int(w0)), imgsz, scaleup=scaleup, stride=stride)
    (rw, rh), (left, top) = info.resized_wh, info.offset
    oh, ow = info.out_hw
    if min(rw, rh) < 1:
        raise ValueError(f"frames of shape {(int(h0), int(w0))} are too thin to letterbox into {(oh, ow)}.")
    fill = fill_value(color)
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
