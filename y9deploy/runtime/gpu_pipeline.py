"""``GpuPipeline``: the Detector's torch pipeline (on CUDA): frames -> Detections with everything but the frame
upload and the download of the detections on the device, on one CUDA stream.

1. pre-processing: ``pre.device.DevicePre`` ("hybrid", "gpu" or "cpu", see there);
2. inference: ``backend.infer`` on the device tensor (a CUDA graph replay on the torch and TensorRT backends);
3. post-processing: ``post.runner.PostRunner`` with the implementation ``y9core.post.choice.choose_post``
   picks (CUDA graphs, batched torch with the Triton or the fixed-point scan, the host, or end-to-end rows); the
   rows are turned into Detections for the whole batch at once (``post.host.batch_to_detections``).

Built by ``runtime.frame_pipeline.build_pipeline`` (tests and benchmarks also build it with explicit options and
hand it to ``Detector.pipeline``).

``run_stream`` (``Detector.predict_stream``) pipelines a sequence of batches through a
``runtime.gpu_stream.StreamRunner`` (``stream_runner``): the host letterbox and upload of the next batch run in
a background thread into the second of two staging slots while the device works on the current one.

The same code runs on CPU tensors (``device="cpu"``): the tests compare it with the host pipeline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from y9deploy.pre.impl import PreImpl
from y9deploy.pre.spec import LetterboxSpec
from y9deploy.runtime.pipeline import INFER, NULL_TIMER, POST, PRE, Chunk


class GpuPipeline:
    """Pre-process, infer and post-process one batch on a torch device (see the module docstring).

    Args:
        backend: a backend whose ``infer`` takes torch tensors (CUDA ones on a CUDA device).
        info: the model's facts (ModelFacts: letterbox rule, names).
        stream: the torch CUDA stream to run on (created when None).
        pre: "hybrid" (default), "gpu" or "cpu" (``pre.impl.PreImpl``).
        post: the Detector's ``postprocess`` option: "auto", "gpu" or "cpu" (``y9core.post.choice``).
        workers: threads of the host letterbox (default: up to 16, one per core).
        device: torch device (default: the backend's); tests pass "cpu" to run the same code on the CPU.
        graph_post: the CUDA-graph post-processing: None (automatic: ``y9core.post.choice``; a failing kernel
            then falls back with a warning), True to require it (on the CPU: its steps run eagerly, the tests with
            Triton's interpreter), False never.
    """

    kind = "torch"

    def __init__(
        self,
        backend: Any,
        info: Any,
        *,
        stream: Any = None,
        pre: str = "hybrid",
        post: str = "auto",
        workers: int | None = None,
        device: Any = None,
        graph_post: bool | None = None,
    ) -> None:
        import torch

        from y9deploy.post.runner import PostRunner
        from y9deploy.pre.device import DevicePre

        self.torch = torch
        self.backend = backend
        self.info = info
        self.names = list(info.names)
        self.spec = LetterboxSpec.of(backend.input_hw, info.letterbox)
        self.imgsz = self.spec.imgsz
        self.device = torch.device(device or backend.device)
        self.cuda = self.device.type == "cuda"
        self.stream = (stream or torch.cuda.Stream(self.device)) if self.cuda else None
        self.dtype = torch.float16 if np.dtype(backend.input_dtype) == np.float16 else torch.float32
        if pre not in ("hybrid", "gpu", "cpu") or post not in ("auto", "cpu", "gpu"):
            raise ValueError(
                f"pre={pre!r}, post={post!r}; expected pre hybrid|gpu|cpu and post auto|cpu|gpu."
            )
        self.pre = PreImpl(pre)
        self.post_option = post
        self.post_runner = PostRunner(
            nc=len(self.names), names=self.names, device=self.device, tensors=True, end2end=bool(backend.end2end),
            option=post, graphs=graph_post,
        )  # fmt: skip
        self.pre_stage = DevicePre(
            self.pre, self.spec, device=self.device, dtype=self.dtype,
            channels_last=bool(getattr(backend, "input_channels_last", False)), workers=workers,
        )  # fmt: skip
        from y9deploy.runtime.gpu_stream import StreamRunner

        self.stream_runner = StreamRunner(self)

    @property
    def post(self) -> Any:
        """The post-processing implementation in use (``y9core.post.choice.PostImpl``)."""
        return self.post_runner.impl

    def on_stream(self) -> Any:
        """A context running the enclosed torch work on the pipeline's CUDA stream (nothing on the CPU)."""
        return self.torch.cuda.stream(self.stream) if self.cuda else contextlib.nullcontext()

    def close(self) -> None:
        self.stream_runner.close()
        self.pre_stage.close()
        self.post_runner.close()

    def run(self, frames: list[np.ndarray], padded: int, opts: Any, timer: Any = NULL_TIMER) -> list[Any]:
        """frames (list of ndarray[H, W, 3] uint8 BGR) -> list of Detections (``padded`` >= len(frames): the
        batch the model is called with)."""
        with self.on_stream():
            timer.mark("start")
            blob, infos = self.pre_stage.run(frames, padded)
            timer.mark(PRE)
            outputs = self.backend.infer(blob, opts.extras(self.backend.extras))
            timer.mark(INFER)
            post = self.post_runner.submit(outputs, len(frames), opts)
            dets = self.post_runner.detections(post, infos)
            timer.mark(POST)
        return dets

    def run_stream(
        self, chunks: Iterator[Chunk], opts: Any, timer: Any = NULL_TIMER
    ) -> Iterator[tuple[list[Any], Any]]:
        """(frames, padded, tag) chunks -> (Detections list, tag) per chunk, in order, the host pre-processing
        of chunk i+1 overlapping the device work of chunk i (``stream_runner``)."""
        return self.stream_runner.run(chunks, opts, timer)


def torch_stream_for(path: Path, device: Any) -> Any:
    """A torch CUDA stream for the Detector's GPU work, when the model will run on CUDA and torch sees a GPU."""
    from y9core.device_spec import parse_device
    from y9core.post.choice import probe

    kind, index = parse_device(device)
    if kind == "cpu":
        return None
    if path.suffix.lower() == ".onnx":  # only worth importing torch when onnxruntime can use the GPU
        try:
            import onnxruntime
        except ImportError:
            return None
        if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
            return None
    if not probe().torch_cuda:
        return None
    import torch

    return torch.cuda.Stream(torch.device(f"cuda:{index}"))
