"""The training network's forward and backward replayed as CUDA graphs (``TrainConfig.cuda_graph``).

A yolov9-s step at batch 32 issues about 7,300 kernels; the host issuing them, not the GPU running them, sets the
step time (docs/benchmarks.md). ``torch.cuda.make_graphed_callables`` records the network's forward and its backward
once, at the batch shape of the first full batch, and afterwards replays each with one launch. The rules:
- only on CUDA, one process, no ``torch.compile``, no gradient checkpointing, no ``multi_scale`` (most batches
  would have another shape and run eagerly beside the captured one, whose memory pool stays allocated: about twice
  the activation memory) - ``GraphedNetwork.applies`` says why not, as one sentence, and the trainer runs eagerly;
  ``cuda_graph`` None (the default) uses them wherever they apply and says nothing where they do not, True asks
  for them (the reason they do not apply is reported), False never;
- a batch of another shape (the last, smaller batch of an epoch; multi-scale) runs the same module eagerly: both
  use the same parameters and BatchNorm buffers;
- the capture's warm-up runs the first batch's forward and backward ``warmup_iters`` times on a side stream
  (``TrainConfig.cuda_graph_warmup``, 3 by default as torch's own; the first one autotunes cuDNN for the shape, each
  further one costs about a step: 1 bounds the capture at one eager step plus the recording); gradients are not
  accumulated, and the module's buffers (BatchNorm running statistics) are put back afterwards (``kept_buffers``),
  so a capture leaves no trace in the model: a resumed run, which captures again in its first epoch, ends with the
  uninterrupted run's weights (``benchmarks/bench_kill_resume.py --device 0 --deterministic``);
- the parameters' ``.grad`` tensors are allocated once before the first replay and zeroed in place between
  optimiser steps (``zero_grad(set_to_none=False)``): a graph's gradient outputs are static buffers that the next
  replay overwrites, so they must be added into ``.grad``, never become it;
- a capture that fails is reported once and the run continues eagerly.
Autocast must not cache casts while capturing: the trainer opens its autocast with ``cache_enabled=False`` here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn


@contextmanager
def kept_buffers(module: nn.Module) -> Iterator[None]:
    """Run the block, then copy every buffer of ``module`` (BatchNorm running mean / variance / batch count) back to
    its value before it, in place: the tensors keep their storage (a captured graph keeps pointing at them)."""
    buffers = list(module.buffers())
    saved = [b.detach().clone() for b in buffers]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, s in zip(buffers, saved, strict=True):
                b.copy_(s)


class GraphedNetwork:
    """``net(imgs) -> train-mode outputs``: CUDA-graph replay at the captured shape, the eager module otherwise.

    Attributes:
        module: the eager module (its parameters are the ones the graphs read and write).
        shape: the captured input shape, None before the first call or when the capture failed.
        failed: the reason the capture failed (the run is eager), else None.
        replays / eager_calls: how many batches took each path.
    """

    def __init__(
        self,
        module: nn.Module,
        params: list[torch.Tensor],
        report: Callable[[str], None] = print,
        warmup_iters: int = 3,
    ):
        if int(warmup_iters) < 1:
            raise ValueError(f"cuda_graph_warmup={warmup_iters}; expected at least 1 warm-up iteration.")
        self.module = module
        self.params = params
        self.report = report
        self.shape: tuple[int, ...] | None = None
        self.failed: str | None = None
        self.replays = self.eager_calls = 0
        self.capture_seconds: float | None = None  # the capture's wall time, warm-up included (synchronised)
        self.warmup_iters = int(warmup_iters)
        self._graphed: Callable | None = None

    @staticmethod
    def applies(
        device: torch.device, *, compile: bool, grad_checkpointing: bool, distributed: bool, multi_scale: bool = False
    ) -> str | None:
        """None when CUDA graphs can be used for this run, else the reason they are not (one sentence)."""
        if device.type != "cuda":
            return f"cuda_graph needs a CUDA device; this run trains on {device.type}, eagerly."
        if compile:
            return "cuda_graph and compile exclude each other; this run uses torch.compile."
        if grad_checkpointing:
            return "cuda_graph does not capture gradient checkpointing; this run trains eagerly."
        if distributed:
            return "cuda_graph is not used with distributed training; this run trains eagerly."
        if multi_scale:
            return (
                "cuda_graph is not used with multi_scale (most batches have another shape than a captured graph, "
                "whose memory would stay allocated beside them); this run trains eagerly."
            )
        return None

    def __call__(self, imgs: torch.Tensor):
        if self._graphed is None and self.failed is None:
            self._capture(imgs)
        if self._graphed is not None and tuple(imgs.shape) == self.shape:
            self.replays += 1
            return self._graphed(imgs)
        self.eager_calls += 1
        return self.module(imgs)

    def _capture(self, imgs: torch.Tensor) -> None:
        t0 = time.perf_counter()
        try:
            self._capture_graphs(imgs)
        finally:
            torch.cuda.synchronize(imgs.device)
            self.capture_seconds = time.perf_counter() - t0

    def _capture_graphs(self, imgs: torch.Tensor) -> None:
        # The warm-up on make_graphed_callables' side stream makes AccumulateGrad nodes that the first backward
        # through a replay (on the default stream) meets, and torch warns of a stream mismatch there; the graphed
        # steps equal the eager ones bit for bit (benchmarks/check_cuda_graph.py), so the warning stays off once
        # a capture succeeded (on the H200 the backward after the capture printed it, not the capture itself).
        warn = getattr(torch.autograd.graph, "set_warn_on_accumulate_grad_stream_mismatch", lambda enabled: None)
        warn(False)
        try:
            # the warm-up's forwards would move BatchNorm's running statistics
            with kept_buffers(self.module):
                torch.cuda.make_graphed_callables(
                    self.module, (imgs,), num_warmup_iters=self.warmup_iters, allow_unused_input=True
                )
            # It installs the graphed forward on the module instance; take it off again so that the module stays
            # eager (other shapes, deep copies, checkpoints) and keep the graphed one here.
            graphed = self.module.__dict__.pop("forward", None)
            if graphed is None:
                raise RuntimeError("make_graphed_callables installed no graphed forward on the module")
        except (RuntimeError, TypeError, ValueError, AssertionError) as exc:  # its checks are asserts
            self.failed = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            self.report(f"cuda_graph: the capture failed ({self.failed}); training continues eagerly.")
            warn(True)
            return
        for p in self.params:  # gradients are added into these, never aliased to the graph's static outputs
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        self._graphed = graphed
        self.shape = tuple(imgs.shape)
        self.report(f"cuda_graph: forward and backward captured at input {list(self.shape)}")


def graphed_network(
    model: nn.Module,
    params: list[torch.Tensor],
    device: torch.device,
    *,
    requested: bool | None,
    compile: bool,
    grad_checkpointing: bool,
    distributed: bool,
    report: Callable[[str], None],
    multi_scale: bool = False,
    warmup_iters: int = 3,
) -> GraphedNetwork | None:
    """The trainer's one decision: a ``GraphedNetwork`` when ``cuda_graph`` (``requested``) is None or True and
    graphs apply, else None; when True was asked for and they do not apply, the reason is reported."""
    if requested is False:
        return None
    why = GraphedNetwork.applies(
        device, compile=compile, grad_checkpointing=grad_checkpointing, distributed=distributed,
        multi_scale=multi_scale,
    )  # fmt: skip
    if why is not None:
        if requested:
            report(why)
        return None
    return GraphedNetwork(model, params, report, warmup_iters)
