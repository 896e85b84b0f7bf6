"""The export's parity check: the ONNX model in onnxruntime (CPU) against the torch model it came from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError


@dataclass
class ParityResult:
    """Largest differences of the raw output ``[B, 4 + nc, A]``: box channels in pixels, score channels.

    ``box_rel`` is the box difference over the largest reference box value; ``score_abs`` the score
    difference (scores lie in [0, 1]). ``passed``: both within ``rtol``.
    """

    batch: int
    box_abs: float
    box_rel: float
    score_abs: float
    rtol: float
    passed: bool

    def describe(self) -> str:
        return (
            f"batch {self.batch}: boxes differ by up to {self.box_abs:.3g} px ({self.box_rel:.2e} relative), "
            f"scores by up to {self.score_abs:.2e} (tolerance {self.rtol:g})"
        )


def compare_raw(onnx_out: np.ndarray, torch_out: np.ndarray, rtol: float) -> ParityResult:
    """Compare two raw outputs ``[B, 4 + nc, A]`` (see :class:`ParityResult`)."""
    a = np.asarray(onnx_out, dtype=np.float64)
    b = np.asarray(torch_out, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"ONNX output shape {a.shape} differs from torch output shape {b.shape}")
    box_abs = float(np.abs(a[:, :4] - b[:, :4]).max())
    box_rel = box_abs / max(float(np.abs(b[:, :4]).max()), 1.0)
    score_abs = float(np.abs(a[:, 4:] - b[:, 4:]).max()) if a.shape[1] > 4 else 0.0
    finite = bool(np.isfinite(a).all())
    passed = finite and box_rel <= rtol and score_abs <= rtol
    return ParityResult(int(a.shape[0]), box_abs, box_rel, score_abs, rtol, passed)


def run_onnxruntime(
    model_bytes: bytes, feeds: dict[str, np.ndarray], outputs: list[str] | None = None
) -> list:
    """Run a serialized ONNX model on onnxruntime's CPU provider."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise BackendUnavailableError(
            "the export's parity check needs onnxruntime (pip install onnxruntime)"
        ) from exc
    from y9deploy.runtime.backends.onnxruntime_backend import cpu_threads

    options = ort.SessionOptions()
    options.log_severity_level = (
        3  # errors only: "initializer appears in graph inputs" is expected for end2end
    )
    threads = cpu_threads()
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return session.run(outputs, feeds)


def parity_input(batch: int, imgsz: tuple[int, int], seed: int = 0) -> np.ndarray:
    """A deterministic input ``float32 [batch, 3, h, w]``, uniform in [0, 1).

    Uniform noise keeps the activations of even randomly initialised networks unsaturated, so that the
    comparison sees real differences (smooth synthetic images saturate such networks: every score 0 or 1).
    """
    return np.random.default_rng(seed).random((batch, 3, *imgsz), dtype=np.float32)


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


def image_input(sources: list[Any], imgsz: tuple[int, int], batch: int) -> np.ndarray:
    """Real images as a parity input ``float32 [batch, 3, h, w]`` (RGB, 0..1, letterboxed like the Detector).

    ``sources``: image files and/or folders (their images, sorted); cycled or cut to ``batch`` images.
    """
    from pathlib import Path

    from y9core.images.read import decode_image
    from y9core.letterbox import letterbox

    files: list[Path] = []
    for src in sources:
        p = Path(src)
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"check image {p} does not exist")
    if not files:
        raise FileNotFoundError(
            f"no images ({', '.join(IMAGE_SUFFIXES)}) found in {[str(s) for s in sources]}"
        )
    out = np.empty((batch, 3, *imgsz), dtype=np.float32)
    for i in range(batch):
        img = decode_image(files[i % len(files)])  # an ImageFileError (ValueError) names the file and why
        lb, _, _ = letterbox(img, imgsz)
        out[i] = lb[:, :, ::-1].transpose(2, 0, 1) / 255.0
    return out


def torch_reference(model: Any, x: np.ndarray) -> np.ndarray:
    """The eval-mode torch output ``[B, 4 + nc, A]`` for ``x`` (float32)."""
    import torch

    with torch.no_grad():
        y = model(torch.from_numpy(x))
    if isinstance(y, (tuple, list)):
        y = y[0]
    return y.float().numpy()


def parity_batch(check_input: Any, batch: int, hw: tuple[int, int], dynamic_batch: bool) -> np.ndarray:
    """The parity check's input: ``check_input`` (an array, or image files/folders) validated, or uniform noise."""
    if check_input is None:
        return parity_input(batch, hw)
    if isinstance(check_input, (str, os.PathLike, list, tuple)):
        sources = [check_input] if isinstance(check_input, (str, os.PathLike)) else list(check_input)
        return image_input(sources, hw, batch)
    x = np.ascontiguousarray(check_input, dtype=np.float32)
    if x.ndim != 4 or x.shape[1:] != (3, *hw) or (not dynamic_batch and x.shape[0] != batch):
        want = f"[{'N' if dynamic_batch else batch}, 3, {hw[0]}, {hw[1]}]"
        raise ValueError(f"check_input has shape {list(x.shape)}, expected {want}")
    return x
