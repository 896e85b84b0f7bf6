"""``PostRunner``: the post-processing of the torch pipeline, by the implementation ``post.choice`` picked.

``submit`` starts post-processing a batch's backend outputs and returns a ``graph.PendingRows`` (the CUDA-graph
implementation returns before the download completes; the others compute the rows at once);
``detections`` turns it into one Detections per frame. A failing kernel, or work an implementation cannot
take, goes down ``choice.FALLBACK`` (the fallback rule of ``post.choice``). torch is imported lazily.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from y9deploy.post.choice import PostImpl, record_failure, step_down
from y9deploy.post.graph import PendingRows


def first_output(outputs: dict[str, Any]) -> Any:
    """The raw prediction among a backend's outputs ("output0", else the first)."""
    return outputs["output0"] if "output0" in outputs else next(iter(outputs.values()))


class PostRunner:
    """Post-processing of batches from one pipeline.

    Args:
        impl: the implementation to start with (``choice.choose_post``).
        nc: classes of the model.
        names: class names (for the Detections).
        device: the torch device the outputs are on.
        auto: ``impl`` was chosen automatically (a failing kernel then falls back instead of raising).
    """

    def __init__(self, impl: PostImpl, *, nc: int, names: list[str], device: Any, auto: bool = True) -> None:
        self.impl = PostImpl(impl)
        self.nc, self.names, self.device, self.auto = int(nc), list(names), device, bool(auto)
        self.graph: Any = None  # the GraphPost when impl is GRAPH
        if self.impl is PostImpl.GRAPH:
            from y9deploy.post.graph import GraphPost

            cuda = getattr(device, "type", str(device)).startswith("cuda")
            self.graph = GraphPost(self.nc, device, graphs=cuda)

    def close(self) -> None:
        if self.graph is not None:
            self.graph.close()

    def submit(self, outputs: dict[str, Any], n: int, opts: Any) -> PendingRows:
        """Start post-processing the first ``n`` images of ``outputs`` under ``opts`` (a PredictOptions)."""
        if self.impl is PostImpl.END2END:
            from y9deploy.post.host import end2end_rows

            host = {k: _host(v, n, float32=False) for k, v in outputs.items()}
            return PendingRows(n, ready=end2end_rows(host, n, opts))
        pred = first_output(outputs)
        tensor = hasattr(pred, "cpu")
        if self.impl is PostImpl.GRAPH and tensor and pred.device == self.device:
            try:
                return self.graph.submit(pred, n, opts)
            except Exception as exc:  # noqa: BLE001 - a kernel that cannot build here must not stop us
                if not self.auto:
                    raise
                self.impl = record_failure(PostImpl.GRAPH, exc)
                self.graph.close()
                self.graph = None
        impl = self.impl if tensor else PostImpl.HOST  # numpy outputs: the host implementation takes them
        if impl is PostImpl.GRAPH:  # a tensor on another device: the next one down, for this work only
            impl = step_down(impl)
        if impl is PostImpl.HOST:
            from y9deploy.post.host import host_rows

            return PendingRows(n, ready=host_rows({"output0": _host(pred, n)}, n, opts, end2end=False))
        from y9deploy.post.torch_batched import batched_postprocess_torch

        scan = "triton" if impl is PostImpl.TORCH_TRITON else "fixed-point"
        kw = dict(
            conf=opts.conf, iou=opts.iou, agnostic=opts.agnostic, max_det=opts.max_det, classes=opts.classes
        )
        try:
            return PendingRows(n, ready=batched_postprocess_torch(pred[:n], scan=scan, **kw))
        except Exception as exc:  # noqa: BLE001 - the Triton kernel failed here: the fixed point
            if impl is not PostImpl.TORCH_TRITON or not self.auto:
                raise
            self.impl = record_failure(PostImpl.TORCH_TRITON, exc)
            return PendingRows(n, ready=batched_postprocess_torch(pred[:n], scan="fixed-point", **kw))

    def detections(self, post: PendingRows, infos: list[Any]) -> list[Any]:
        """A submitted batch -> Detections per frame (one vectorised pass for a whole graph batch)."""
        from y9deploy.post.host import batch_to_detections, to_detections

        if post.ready is None:
            return batch_to_detections(*post.block(), infos, self.names)
        return [to_detections(r, info, self.names) for r, info in zip(post.ready, infos)]


def _host(v: Any, n: int, float32: bool = True) -> np.ndarray:
    """The first ``n`` images of a tensor or array, on the host (raw predictions as float32: numpy's float16
    arithmetic is slow)."""
    if hasattr(v, "cpu"):
        v = v[:n]
        return (v.float() if float32 else v).cpu().numpy()
    return np.asarray(v)[:n]
