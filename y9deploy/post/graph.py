"""Decode + NMS of a batch replayed as CUDA graphs: fixed shapes, no host sync inside, so the post stage of the
GPU path costs two graph launches and two small downloads at any batch size (torch and triton imported lazily).

The eager ``y9core.post.torch_batched.batched_postprocess_torch`` issues a few dozen small kernels per call, each with
Python and launch overhead (a fixed cost per call, docs/benchmarks.md). Here the same float32 operations are
captured once per shape and replayed:

1. ``select`` graph (per batch shape ``[B, 4+nc, A]`` and lane, below): the prediction is copied into the
   graph's input; best class and score of every anchor; the candidate mask under the current thresholds and
   class filter (read from device buffers, so changing ``conf``/``iou``/``classes``/``agnostic`` needs no new
   capture); the candidates of each image (capped at ``max_nms``); the stable descending order of the scores.
2. ``nms`` graph (per shape, lane, ``K`` and ``max_det``): the first K candidates of each image by score, xywh
   -> xyxy, per-class offsets (the span rule of ``boxes.class_offsets``, times 0 when agnostic), the IoU > t
   bits packed 32 to a word straight from the boxes (Triton kernel ``triton_nms.iou_bits``: no [B, K, K]
   float matrix), the greedy scan (``triton_nms.scan_words``, max_det included), and the kept rows scattered
   into ``out [B, max_det + 1, 6]`` (row ``max_det``: kept count, candidate count), downloaded into pinned
   memory; ``PendingRows.rows()`` waits for that copy only.

``K`` must be >= every image's candidate count. The first batch of a shape downloads the counts first (one
sync) and takes the next power of two >= the largest (>= ``MIN_K``). Later batches use the K that the last
batch of that shape needed, with no sync at all: ``submit`` only enqueues, so a pipelined caller can enqueue
the next batch's network before this one's results are back. ``rows()`` checks the counts that came back with
the rows; a batch that had more candidates than K is run again from its kept select outputs with a K that
fits (exact, a little later). Two lanes of select/nms buffers alternate between submits, so a batch's data
survives while the next one is enqueued: at most two submitted batches may be pending, and ``rows()`` of one
must be called before a third is submitted (what ``Detector`` does).

Same operations in the same order as ``y9core.post.nms.decode_nms`` (via ``y9core.post.torch_batched``): identical
detections (tests compare them bit for bit on CPU tensors with Triton's interpreter; benchmarks on the GPU).
A batch whose largest count exceeds ``triton_nms.MAX_K``, or whose packed bits would exceed ``budget`` bytes,
takes the batched torch implementation through ``y9core.post.rows.postprocess`` (exact too: work beyond the
limits, as ``y9core.post.choice`` says).

Each graph has its own memory pool (no aliasing between the outputs of one graph and the scratch memory of
another). One GraphPost per Detector, used from one thread (like ``Detector.predict``). Its state per shape is
typed: ``ShapeKey`` (a batch shape), ``SelectEntry`` (one lane of the select step), ``NmsEntry`` (one nms graph).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from y9core.boxes import threshold_below
from y9core.post.nms import MAX_NMS

MIN_K = 64  # smallest K of an nms graph
BUDGET = 1 << 30  # most bytes of the packed [B, K, K / 32] IoU bits of one nms graph
MAX_GRAPHS = 8  # nms graphs kept (least recently used dropped); select entries: 2 lanes x 2 shapes


def pick_k(max_count: int, min_k: int = MIN_K) -> int:
    """The K of the nms graph for a batch whose largest candidate count is ``max_count``: the next power of
    two >= max_count, at least ``min_k`` (few distinct K, so few graphs)."""
    return max(int(min_k), 1 << max(0, int(max_count) - 1).bit_length())


@dataclass(frozen=True)
class ShapeKey:
    """A batch shape: the prediction's ``[B, 4+nc, A]`` and dtype."""

    shape: tuple[int, ...]
    dtype: Any


@dataclass
class SelectEntry:
    """One lane of the select step of one shape: the graph's input copy, its outputs and the graph."""

    shape: ShapeKey
    lane: int
    x: Any  # Tensor[B, 4+nc, A]: the graph's input
    sel: Any  # torch_batched.Candidates: the graph's outputs
    graph: Any = None  # torch.cuda.CUDAGraph (None: eager steps)
    opts: Any = None  # the PredictOptions of the last batch submitted from this lane
    host: Any = None  # pinned Tensor[B, max_det + 1, 6] the nms output is downloaded into
    event: Any = None  # CUDA event after that download


@dataclass
class NmsEntry:
    """One nms graph: of a select entry, for one K and max_det."""

    graph: Any
    out: Any  # Tensor[B, max_det + 1, 6]


@dataclass
class GraphStats:
    """Calls per path and the last K (benchmarks read them)."""

    graph: int = 0
    eager: int = 0
    k: int = 0


@dataclass
class PendingRows:
    """A submitted batch: ``rows()`` waits for its download and returns one ndarray[N, 6] float32 per image
    (x1, y1, x2, y2, score, class in network-input pixels, by descending score)."""

    n: int
    host: Any = None  # pinned Tensor[B, max_det + 1, 6] the results are downloaded into
    event: Any = None  # CUDA event after the download (None on the CPU)
    max_det: int = 0
    k: int = 0  # the K the batch ran with
    owner: GraphPost | None = None  # K bookkeeping, re-runs
    lane: SelectEntry | None = None  # the select entry the batch ran from
    ready: list[np.ndarray] | None = None  # results computed eagerly (fallback path)
    waited: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)  # block()'s result

    def block(self) -> tuple[np.ndarray, np.ndarray]:
        """Wait for the download: (ndarray[n, max_det, 6] rows, ndarray[n] kept per image), image i's rows
        being ``rows[i, :kept[i]]``. A view of the pinned buffer, valid until the next submit but one of this
        shape. Not for results computed eagerly (``ready``)."""
        if self.waited is not None:
            return self.waited
        if self.event is not None:
            self.event.synchronize()
        blk = self.host.numpy()
        top = int(blk[: self.n, self.max_det, 1].max(initial=0))
        self.owner.counted(self.lane, top)
        if top > self.k:  # more candidates than the K it ran with: again, with a K that fits
            again = self.owner.run_nms(self.lane, top, self.n, self.max_det)
            if again.ready is not None:  # too many for a graph: the eager path's rows, as a block
                self.ready = again.ready
                width = max(1, max(len(r) for r in again.ready))
                blk = np.zeros((self.n, width, 6), np.float32)
                for i, r in enumerate(again.ready):
                    blk[i, : len(r)] = r
                self.waited = blk, np.array([len(r) for r in again.ready], np.int64)
            else:
                self.waited = again.block()
            return self.waited
        self.waited = blk[: self.n, : self.max_det], blk[: self.n, self.max_det, 0].astype(np.int64)
        return self.waited

    def rows(self) -> list[np.ndarray]:
        if self.ready is not None:
            return self.ready
        blk, kept = self.block()
        return [blk[i, : kept[i]].copy() for i in range(self.n)]


class GraphPost:
    """Batched decode + NMS as CUDA graphs (see the module docstring).

    Args:
        nc: classes of the model.
        device: torch device of the predictions.
        graphs: capture CUDA graphs (default: when ``device`` is CUDA); False runs the same steps eagerly (the
            tests, on CPU tensors with ``TRITON_INTERPRET=1``).
        min_k, budget, max_nms: see the module docstring.
    """

    def __init__(
        self,
        nc: int,
        device: Any,
        *,
        graphs: bool | None = None,
        min_k: int = MIN_K,
        budget: int = BUDGET,
        max_nms: int = MAX_NMS,
    ) -> None:
        import torch

        self.torch = torch
        self.nc = int(nc)
        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.graphs = cuda if graphs is None else bool(graphs)
        if self.graphs and not cuda:
            raise ValueError(f"graphs=True needs a CUDA device; got {self.device}.")
        self.min_k, self.budget, self.max_nms = int(min_k), int(budget), int(max_nms)
        dev = self.device
        self.thr = torch.zeros(self.nc, dtype=torch.float32, device=dev)  # conf threshold per class
        self.allowed = torch.ones(self.nc, dtype=torch.bool, device=dev)  # class filter
        self.iou_t = torch.zeros(1, dtype=torch.float32, device=dev)  # threshold_below(iou)
        self.class_scale = torch.ones(1, dtype=torch.float32, device=dev)  # 0.0: agnostic
        self.opts_key: tuple[bytes, bytes, float, bool] | None = None  # the options in the buffers
        self.stats = GraphStats()
        self.select: OrderedDict[tuple[ShapeKey, int], SelectEntry] = OrderedDict()
        self.nms: OrderedDict[tuple[ShapeKey, int, int, int], NmsEntry] = OrderedDict()
        self.next_lane: dict[ShapeKey, int] = {}  # per batch shape: the lane of the next submit (0 or 1)
        self.last_k: dict[ShapeKey, int] = {}  # per batch shape: the K its last batch needed
        self.counts_host: Any = None
        self.counts_event = torch.cuda.Event() if cuda else None

    def close(self) -> None:
        self.select.clear()
        self.nms.clear()
        self.last_k.clear()

    # ---------------------------------------------------------------- options (device buffers)
    def set_options(self, opts: Any) -> None:
        """Write conf/iou/classes/agnostic of ``opts`` (a PredictOptions) into the device buffers the graphs
        read (only when they changed)."""
        torch = self.torch
        from y9core.post.torch_batched import class_thresholds

        thr, allowed = class_thresholds(opts.conf, opts.iou, opts.classes, self.nc)
        key = (thr.tobytes(), allowed.tobytes(), float(opts.iou), bool(opts.agnostic))
        if key == self.opts_key:
            return
        self.thr.copy_(torch.from_numpy(thr))
        self.allowed.copy_(torch.from_numpy(allowed))
        self.iou_t.fill_(float(threshold_below(opts.iou)))
        self.class_scale.fill_(0.0 if opts.agnostic else 1.0)
        self.opts_key = key

    # ---------------------------------------------------------------- the two steps
    def select_step(self, x: Any) -> Any:
        """x (Tensor[B, 4+nc, A], fp16/fp32) -> ``torch_batched.select_candidates`` under the buffers."""
        from y9core.post.torch_batched import select_candidates

        return select_candidates(x, self.thr, self.allowed, self.max_nms)

    def nms_step(self, x: Any, sel: Any, k: int, max_det: int) -> Any:
        """The first k candidates of each image -> out Tensor[B, max_det + 1, 6] f32 (kept rows by score; row
        max_det: the kept count in column 0)."""
        torch = self.torch
        from y9core.post import triton_nms
        from y9core.post.torch_batched import class_offsets_torch, sorted_boxes

        b = x.shape[0]
        boxes, scores, clsf = sorted_boxes(x, sel, k)  # [B, K, 4], [B, K], [B, K]
        counts = sel.counts
        alive = torch.arange(k, device=x.device)[None, :] < counts[:, None]  # [B, K]
        offset = class_offsets_torch(boxes, alive) * self.class_scale  # 0 when agnostic
        shifted = boxes + (clsf * offset[:, None])[..., None]
        words = triton_nms.iou_bits(shifted, counts, self.iou_t)  # [B, K, K / 32] packed IoU > t bits
        keep = triton_nms.scan_words(words, counts, max_det)  # [B, K] bool, at most max_det per image
        spare = torch.full((b, k), max_det, dtype=torch.int64, device=x.device)
        pos = torch.where(keep, keep.cumsum(1) - 1, spare)  # rank, or the spare row
        rows = torch.cat([boxes, scores[..., None], clsf[..., None]], 2)  # [B, K, 6]
        out = torch.zeros((b, max_det + 1, 6), dtype=torch.float32, device=x.device)
        out.scatter_(1, pos[..., None].expand(b, k, 6), rows)
        out[:, max_det, 0] = keep.sum(1).float()  # after the scatter: the spare row collected junk
        out[:, max_det, 1] = counts.float()  # exact: counts <= A
        return out

    # ---------------------------------------------------------------- graphs
    def capture(self, fn: Any, *args: Any) -> tuple[Any, Any]:
        """(graph, outputs) of ``fn(*args)`` captured after one eager warm-up on a side stream (Triton
        compiles, cub sizes its scratch memory)."""
        torch = self.torch
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            fn(*args)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):  # a private pool
            out = fn(*args)
        return graph, out

    def select_entry(self, pred: Any) -> SelectEntry:
        """Run the select step of ``pred`` in the next lane of its shape: that lane's entry."""
        shape = ShapeKey(tuple(pred.shape), pred.dtype)
        lane = self.next_lane.get(shape, 0)
        self.next_lane[shape] = 1 - lane
        entry = self.select.get((shape, lane))
        if entry is not None:
            self.select.move_to_end((shape, lane))
            entry.x.copy_(pred, non_blocking=True)
            if entry.graph is not None:
                entry.graph.replay()
            else:
                entry.sel = self.select_step(entry.x)
            return entry
        if len(self.select) >= 4:  # two shapes x two lanes
            (old_shape, old_lane), _ = self.select.popitem(last=False)
            for key in [key for key in self.nms if key[:2] == (old_shape, old_lane)]:
                del self.nms[key]
        x = self.torch.empty(pred.shape, dtype=pred.dtype, device=self.device)
        x.copy_(pred, non_blocking=True)
        graph, sel = self.capture(self.select_step, x) if self.graphs else (None, self.select_step(x))
        if graph is not None:
            graph.replay()  # the capture recorded the work; the replay does it
        entry = self.select[(shape, lane)] = SelectEntry(shape, lane, x, sel, graph)
        return entry

    def nms_out(self, entry: SelectEntry, k: int, max_det: int) -> Any:
        if not self.graphs:
            return self.nms_step(entry.x, entry.sel, k, max_det)
        key = (entry.shape, entry.lane, k, max_det)
        nms = self.nms.get(key)
        if nms is None:
            if len(self.nms) >= MAX_GRAPHS:
                self.nms.popitem(last=False)
            nms = self.nms[key] = NmsEntry(*self.capture(self.nms_step, entry.x, entry.sel, k, max_det))
        else:
            self.nms.move_to_end(key)
        nms.graph.replay()
        return nms.out

    def counted(self, entry: SelectEntry, top: int) -> None:
        """A batch of ``entry``'s shape came back with ``top`` candidates in its fullest image."""
        self.last_k[entry.shape] = pick_k(top, self.min_k)

    def download_counts(self, entry: SelectEntry, n: int) -> int:
        """The largest candidate count of the first n images (waits for the select step)."""
        torch = self.torch
        counts = entry.sel.counts
        if self.counts_event is None:
            return int(counts.numpy()[:n].max(initial=0))
        if self.counts_host is None or self.counts_host.numel() < counts.numel():
            self.counts_host = torch.empty(counts.numel(), dtype=torch.int32, pin_memory=True)
        host = self.counts_host[: counts.numel()]
        host.copy_(counts, non_blocking=True)
        self.counts_event.record()
        self.counts_event.synchronize()
        return int(host.numpy()[:n].max(initial=0))

    def run_nms(self, entry: SelectEntry, top: int, n: int, max_det: int) -> PendingRows:
        """Enqueue the nms step of ``entry`` with the K for ``top`` candidates, and the download; a K beyond
        the kernels or the budget: the implementation the rule gives without graphs, for this work only
        (``y9core.post.rows.postprocess``: the batched torch one)."""
        torch = self.torch
        from y9core.post import triton_nms

        b, _, a = entry.x.shape
        k = min(pick_k(top, self.min_k), int(a))  # never more than the anchors (counts <= A)
        if k > triton_nms.MAX_K or b * k * k // 8 > self.budget:
            self.stats.eager += 1
            from y9core.post.rows import postprocess

            o = entry.opts
            rows = postprocess(
                entry.x[:n], conf=o.conf, iou=o.iou, agnostic=o.agnostic, max_det=max_det,
                classes=o.classes, max_nms=self.max_nms,
            )  # fmt: skip
            return PendingRows(n, ready=rows)
        self.stats.graph += 1
        self.stats.k = k
        out = self.nms_out(entry, k, max_det)
        pending = PendingRows(n, max_det=max_det, k=k, owner=self, lane=entry)
        if self.device.type != "cuda":
            pending.host = out
            return pending
        if entry.host is None or entry.host.shape != out.shape:
            entry.host = torch.empty(out.shape, dtype=torch.float32, pin_memory=True)
        entry.host.copy_(out, non_blocking=True)
        entry.event = entry.event or torch.cuda.Event()
        entry.event.record()
        pending.host, pending.event = entry.host, entry.event
        return pending

    # ---------------------------------------------------------------- public
    def submit(self, pred: Any, n: int, opts: Any) -> PendingRows:
        """Enqueue post-processing of ``pred`` (Tensor[B, 4+nc, A] on ``device``; the first ``n`` images are
        real) under ``opts`` (a PredictOptions) on the current stream. Returns at once when a batch of this
        shape ran before (else after one wait for the candidate counts); ``PendingRows.rows()`` waits for the
        results (module docstring)."""
        if pred.ndim != 3 or pred.shape[1] != 4 + self.nc:
            raise ValueError(
                f"pred has shape {tuple(pred.shape)}; expected [B, {4 + self.nc}, A] for {self.nc} classes."
            )
        max_det = int(opts.max_det)
        if max_det < 1:
            raise ValueError(f"max_det is {max_det!r}; expected a positive number of detections.")
        self.set_options(opts)
        entry = self.select_entry(pred)
        entry.opts = opts
        k = self.last_k.get(entry.shape)
        if k is None:
            top = self.download_counts(entry, n)
            if top == 0:
                return PendingRows(n, ready=[np.zeros((0, 6), np.float32) for _ in range(n)])
            k = top
        return self.run_nms(entry, k, n, max_det)
