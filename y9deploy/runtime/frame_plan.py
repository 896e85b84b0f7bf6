"""``FramePlan``: a frame's way through the host pipeline, decided once per frame size and options.

What the host pipeline decides again for every batch (the letterbox geometry, the padding, the buffers, the
post-processing implementation, the thresholds checked, the output read, the factors that map boxes back to the
frame, the class names checked) is decided here once for the frames of one shape under one ``PredictOptions``;
what is left per frame is one call into each of three modules. ``Detector.predict`` runs a plan for one frame
(``runtime.detector``: ``Detector._run_plan``)::

    plan.pre.load(frame); for step in plan.pre.steps: step()    # pre.host.frame_pre: OpenCV/numpy on buffers
    outputs = backend.infer(plan.pre.blob)                      # the backend (the Detector's, looked up per call)
    xyxy, scores, classes = plan.rows(outputs[plan.output])     # y9core.boxes.decode_nms_frame
    detections = plan.detections(xyxy, scores, classes)         # y9deploy.detections.Detections.unchecked

Each rule stays in its one module; a plan holds only what those rules decided for its frames, and gives the
detections ``HostPipeline.run`` gives (``tests/deploy/test_frame_plan.py`` compares them bit for bit).
``build_frame_plan`` returns None where only ``run`` can take the work: an end-to-end model, a post-processing
implementation other than the host one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from y9core.boxes import decode_nms_frame
from y9core.letterbox import unmap_factors
from y9core.post.choice import PostImpl
from y9core.post.nms import MAX_NMS, check_classes, check_thresholds
from y9deploy.detections import Detections, checked_names
from y9deploy.pre.host import FramePre, frame_pre


@dataclass(frozen=True)
class FramePlan:
    """The way of the frames of one shape and dtype under ``opts`` (the module docstring shows how it runs).

    Attributes:
        opts: the ``PredictOptions`` it was built for (another options object needs another plan).
        pre: the letterbox into the input blob (``pre.host.FramePre``).
        output: the name of the raw prediction among the backend's outputs.
        rows: raw prediction -> ``(xyxy, scores, classes)`` in frame pixels (``decode_nms_frame``, settings bound).
        detections: ``(xyxy, scores, classes)`` -> ``Detections`` (the class's constructor for arrays the
            runtime made, the names checked once).
    """

    opts: Any
    pre: FramePre
    output: str
    rows: Callable[[Any], tuple[np.ndarray, np.ndarray, np.ndarray]]
    detections: Callable[[np.ndarray, np.ndarray, np.ndarray], Detections]


def build_frame_plan(pipeline: Any, frame: np.ndarray, opts: Any) -> FramePlan | None:
    """The ``FramePlan`` of a ``HostPipeline`` for frames like ``frame`` (checked: one clear sentence for a frame
    that is not HxWx3 uint8) under ``opts``; None where only ``pipeline.run`` can take the work."""
    runner, backend = pipeline.post_runner, pipeline.backend
    if pipeline.extras or not runner.fixed or runner.impl is not PostImpl.HOST:
        return None
    blob, planes = pipeline.frame_buffers()
    pre = frame_pre(frame, pipeline.spec.imgsz, blob, planes, **pipeline.letterbox)
    if pre is None:
        return None
    names = list(getattr(backend, "output_names", None) or ["output0"])
    nc = len(pipeline.names)
    rows = functools.partial(
        decode_nms_frame, thresholds=check_thresholds(opts.conf, opts.iou, nc), iou=float(opts.iou),
        max_det=int(opts.max_det), classes=check_classes(opts.classes, nc), agnostic=bool(opts.agnostic),
        max_nms=MAX_NMS, unmap=unmap_factors(pre.info),
    )  # fmt: skip
    detections = functools.partial(Detections.unchecked, names=checked_names(pipeline.names))
    return FramePlan(opts, pre, "output0" if "output0" in names else names[0], rows, detections)
