"""``PostRunner``: the Detector's post-processing (both pipelines, and the Triton client), by the implementation
``y9core.post.choice.choose_post`` picks for the facts the runner is given.

``submit`` starts post-processing a batch's backend outputs and returns a ``graph.PendingRows`` (the CUDA-graph
implementation returns before the download completes; the others compute the rows at once);
``detections`` turns it into one Detections per frame. The rule is asked again for every batch: a kernel that
failed (and was recorded) is skipped from then on, and work the chosen implementation cannot take (numpy outputs,
tensors on another device) gets the implementation the rule gives for that work. This module is the only caller of
the implementations: ``graph.GraphPost``, ``host.end2end_rows`` and ``y9core.post.rows.rows_with``. torch is
imported lazily.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from y9core.post.choice import PostImpl, choose_post, probe, record_failure
from y9deploy.post.graph import PendingRows


def first_output(outputs: dict[str, Any]) -> Any:
    """The raw prediction among a backend's outputs ("output0", else the first)."""
    return outputs["output0"] if "output0" in outputs else next(iter(outputs.values()))


class PostRunner:
    """Post-processing of batches from one pipeline.

    Args:
        nc: classes of the model.
        names: class names (for the Detections).
        device: where the outputs are (a torch device for the torch pipeline, "cpu" for numpy outputs).
        tensors: the outputs are torch tensors (the torch pipeline).
        end2end: the model has its NMS inside.
        option: the Detector's ``postprocess`` option: "auto", "gpu" or "cpu".
        graphs: the CUDA-graph implementation: None (automatic; a failing kernel then falls back with a
            warning), True to require it (on the CPU: its steps run eagerly), False never.
    """

    def __init__(
        self,
        *,
        nc: int,
        names: list[str],
        device: Any = "cpu",
        tensors: bool = False,
        end2end: bool = False,
        option: str = "auto",
        graphs: bool | None = None,
    ) -> None:
        self.nc, self.names, self.device = int(nc), list(names), device
        where = str(device)
        cuda = where.startswith("cuda")
        self.facts: dict[str, Any] = dict(device=where, end2end=bool(end2end), option=option,
                                          torch_tensors=bool(tensors), triton=cuda and probe().triton,
                                          graphs=graphs)  # fmt: skip
        self.auto = graphs is not True  # chosen automatically: a failing kernel falls back instead of raising
        self.impl = choose_post(**self.facts)
        if option == "gpu" and self.impl is PostImpl.HOST:  # refused as preprocess='gpu' is, never quietly the host
            raise ValueError(
                "postprocess='gpu' needs the outputs as torch tensors on a CUDA device; this model's come to the host "
                f"as numpy arrays (device {where}{'' if cuda else ', or no torch with CUDA'}): expected 'auto' or "
                "'cpu' here."
            )
        self.graph: Any = None  # the GraphPost, once the rule gives GRAPH
        # numpy outputs on the host: no kernel that could fail, so the rule's answer above holds for every batch
        self.fixed = not tensors and graphs is False and self.impl in (PostImpl.HOST, PostImpl.END2END)

    def close(self) -> None:
        if self.graph is not None:
            self.graph.close()
            self.graph = None

    def submit(self, outputs: dict[str, Any], n: int, opts: Any) -> PendingRows:
        """Start post-processing the first ``n`` images of ``outputs`` under ``opts`` (a PredictOptions)."""
        self.impl = choose_post(**self.facts)  # the implementation in use (a recorded failure is skipped)
        if self.impl is PostImpl.END2END:
            from y9deploy.post.host import end2end_rows

            host = {k: _host(v, n, float32=False) for k, v in outputs.items()}
            return PendingRows(n, ready=end2end_rows(host, n, opts))
        pred = first_output(outputs)
        tensor = hasattr(pred, "cpu")
        if tensor and pred.device == self.device:
            work = self.facts
        else:  # work this runner's choice cannot take: the rule's implementation for that work, this work only
            where = str(pred.device) if tensor else "cpu"
            work = {**self.facts, "device": where, "torch_tensors": tensor, "graphs": False,
                    "triton": where.startswith("cuda") and probe().triton}  # fmt: skip
        impl = self.impl if work == self.facts else choose_post(**work)  # the same facts: the same answer
        if impl is PostImpl.GRAPH:
            try:
                return self._graph_post().submit(pred, n, opts)
            except Exception as exc:  # noqa: BLE001 - a kernel that cannot build here must not stop us
                if not self.auto:
                    raise
                record_failure(PostImpl.GRAPH, exc)
                self.close()
                self.impl = impl = choose_post(**work)
        from y9core.post.rows import rows_with

        raw = pred[:n] if tensor else np.asarray(pred)[:n]
        rows = rows_with(impl, raw, conf=opts.conf, iou=opts.iou, agnostic=opts.agnostic, max_det=opts.max_det,
                         classes=opts.classes, fallback=self.auto)  # fmt: skip
        return PendingRows(n, ready=rows)

    def run(self, outputs: dict[str, Any], n: int, opts: Any, infos: list[Any]) -> list[Any]:
        """``submit`` then ``detections`` at once (the host pipeline: nothing to overlap). A runner of numpy
        outputs (``fixed``) runs the implementation chosen when it was built, the rows straight to Detections."""
        if not self.fixed:
            return self.detections(self.submit(outputs, n, opts), infos)
        from y9deploy.post.host import end2end_rows, to_detections

        if self.impl is PostImpl.END2END:
            rows = end2end_rows({k: np.asarray(v)[:n] for k, v in outputs.items()}, n, opts)
        else:
            from y9core.post.rows import rows_with

            rows = rows_with(self.impl, np.asarray(first_output(outputs))[:n], conf=opts.conf, iou=opts.iou,
                             agnostic=opts.agnostic, max_det=opts.max_det, classes=opts.classes, fallback=False)  # fmt: skip
        return [to_detections(r, info, self.names) for r, info in zip(rows, infos)]

    def _graph_post(self) -> Any:
        if self.graph is None:
            from y9deploy.post.graph import GraphPost

            self.graph = GraphPost(self.nc, self.device, graphs=self.facts["device"].startswith("cuda"))
        return self.graph

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
