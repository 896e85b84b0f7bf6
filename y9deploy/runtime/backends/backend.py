"""The one small protocol every inference backend implements, and the metadata they share.

A backend turns a pre-processed batch into raw outputs; the Detector does pre- and post-processing.

- ``infer(batch)`` takes ``batch`` (ndarray[B, 3, H, W] of ``input_dtype``, RGB, 0..1) and returns numpy
  arrays, or, on a CUDA backend, a torch CUDA tensor of the same layout and returns torch CUDA tensors
  (the GPU path: nothing leaves the device). Outputs are keyed by name: ``output0`` (ndarray[B, 4+nc, A])
  for raw models; ``num_dets`` [B, 1], ``boxes`` [B, max_det, 4], ``scores`` [B, max_det], ``classes``
  [B, max_det] for end-to-end models (NMS inside). Returned arrays may be views of buffers that the next
  ``infer`` overwrites: copy what must outlive it.
- ``extras``: for end-to-end models whose NMS thresholds are inputs (``score_threshold``,
  ``iou_threshold``, ``max_output_boxes``), ``infer(batch, extras)`` passes their values.

Backends are not thread-safe: one thread per backend (a Detector refuses a second thread: ``runtime.detector.BusyGuard``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from y9core.model_facts import ModelFacts
from y9deploy.facts_metadata import extra_props, facts_from_props, metadata_strides  # noqa: F401 - re-exported

END2END_OUTPUTS = ("num_dets", "boxes", "scores", "classes")
NMS_INPUTS = ("score_threshold", "iou_threshold", "max_output_boxes")


@runtime_checkable
class Backend(Protocol):
    """What the Detector needs from an inference backend (see the module docstring)."""

    name: str  # "onnxruntime", "torch", "tensorrt" or "tensorrt_rtx"
    device: str  # "cpu" or "cuda:N"
    input_name: str
    input_hw: tuple[int, int]
    input_dtype: np.dtype
    batch_range: tuple[int, int]  # (min, max) batch the model accepts
    end2end: bool
    extras: tuple[str, ...]  # NMS threshold inputs of an end-to-end model, if any
    info: ModelFacts  # the model's facts, read from the file
    metadata: dict[str, Any]  # describe_model(info, ...): the facts as a dict plus the file's other entries

    def infer(self, batch: Any, extras: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def close(self) -> None: ...


def parse_metadata(
    props: dict[str, str], *, where: str, imgsz: tuple[int, int] | None = None, nc: int | None = None
) -> ModelFacts:
    """ONNX ``metadata_props`` (or an engine manifest's ``onnx_metadata``) -> the model's ``ModelFacts``
    (``y9deploy.facts_metadata.facts_from_props``: every entry checked, one sentence naming ``where``).

    Args:
        props: the string key/value pairs.
        where: the file they came from (for error messages).
        imgsz: the (h, w) of the model input when the file fixes it (used when ``imgsz`` is absent).
        nc: the number of classes the outputs have (names default to ``class0..``; a mismatch is an error).
    """
    return facts_from_props(props, where=where, input_hw=imgsz, nc=nc)


def describe_model(facts: ModelFacts, props: dict[str, str] | None = None, **artifact: Any) -> dict[str, Any]:
    """A backend's ``metadata``: the facts as a dict, the file's artifact entries (``dynamic_batch`` ...) and any
    other metadata strings it holds."""
    extra = extra_props(props or {})
    return {**extra, **facts.to_dict(), **artifact}


def is_torch_tensor(x: Any) -> bool:
    """True for a torch.Tensor, without importing torch."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")
