"""Models and real inputs for the export tests.

The official fixture weights were calibrated on random 256x256 inputs; at 640 on photos these random
networks saturate or turn chaotic in float32 (tiny rounding differences grow to pixels), which says nothing
about an export. Following ../shared/fixtures/official/README.md, the BatchNorm statistics are re-estimated
on real images first (coco8's four train images, letterboxed): the networks then behave like trained ones.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np
import torch

from tests.conftest import shared_path


def letterboxed(paths, hw: tuple[int, int]) -> np.ndarray:
    """float32 [N, 3, h, w] RGB in 0..1, letterboxed like the Detector does."""
    from y9deploy.preprocess import letterbox

    out = []
    for p in paths:
        img = cv2.imread(str(p))
        assert img is not None, p
        lb, _, _ = letterbox(img, hw)
        out.append(lb[:, :, ::-1].transpose(2, 0, 1).astype(np.float32) / 255)
    return np.ascontiguousarray(np.stack(out))


def recalibrate_bn(model: torch.nn.Module, x: np.ndarray) -> torch.nn.Module:
    """Reset BatchNorm running statistics and re-estimate them on ``x`` (one train-mode pass); eval mode."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # cumulative average
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(x))
    return model.eval()


# Images on which each calibrated network's own float32 error (against float64) stays below 5e-5 (boxes
# relative, scores absolute): yolov9-c calibrated on coco8's train images, its first two val images at 640x640
# (8.4e-6 / 4.1e-5 and 4e-7 / 4.9e-6; the fourth reaches 1.3e-3 by itself), at 384x640 (at most 2.5e-6) and,
# calibrated at 320x320, at 320x320 (1.9e-7 / 2.1e-7 and 6.4e-6 / 3.1e-5; the fourth 4.1e-4 / 1.9e-3) and,
# calibrated at 160x160, at 160x160 (1.8e-7 / 2.8e-7 and 2.6e-7 / 1.1e-6).
# There, a comparison against the 1e-3 tolerance measures the export, not the random network's rounding noise.
WELL_CONDITIONED = {"yolov9-c": "val"}


def coco8(split: str, hw: tuple[int, int]) -> np.ndarray:
    """coco8's four ``split`` images, letterboxed: float32 [4, 3, h, w]."""
    folder = shared_path("datasets", "coco8", "images", split)
    images = sorted(folder.glob("*.jpg"))
    assert len(images) == 4, folder
    return letterboxed(images, hw)


@lru_cache(maxsize=4)
def calibrated_model(name: str, size: int = 640) -> torch.nn.Module:
    """Fixture-weight model ``name`` with BatchNorm re-estimated on coco8's four train images at ``size`` x
    ``size`` (one train-mode pass: 13 s for yolov9-c at 640 on one thread, a quarter of that at 320). Shared
    between tests: never modify it (export_onnx works on a copy)."""
    from tests.train.model_fixtures import official_weights_model

    return recalibrate_bn(official_weights_model(name), coco8("train", (size, size)))


def inputs_for(name: str, hw: tuple[int, int]) -> np.ndarray:
    """The well-conditioned real inputs of ``name`` (see WELL_CONDITIONED): float32 [2, 3, h, w]."""
    return coco8(WELL_CONDITIONED[name], hw)[:2]


def torch_out(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def rel_diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(box difference / largest reference box value, largest score difference) of raw outputs."""
    box = float(np.abs(a[:, :4] - b[:, :4]).max() / np.abs(b[:, :4]).max())
    score = float(np.abs(a[:, 4:] - b[:, 4:]).max())
    return box, score
