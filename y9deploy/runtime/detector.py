"""``Detector``: one line from a model file to detections.

    with Detector("yolov9-s.engine") as det:        # or .onnx / .pt
        dets = det.predict(frame)                    # frame: HxWx3 uint8 BGR
        dets.xyxy, dets.confidence, dets.class_id, dets.names

The backend comes from the file suffix (.engine/.trt/.plan: TensorRT; .onnx: ONNX Runtime; .pt: PyTorch)
and the model description (class names, input size, letterbox) from the file itself (ONNX metadata, engine
manifest, checkpoint). End-to-end models (NMS inside) run transparently.

On a CUDA backend with torch installed, pre-processing runs on the GPU (the uint8 frame is uploaded once,
then letterboxed and normalised there), the network is a CUDA graph replay for each batch size, and
decoding + NMS run on the GPU; only the detections come back.

Threads: a Detector serves one thread at a time (it reuses its buffers, CUDA stream and graphs, so memory does
not grow over long runs); another thread calling it while it is busy gets DetectorBusyError, never wrong
results (``runtime.busy``). Use one Detector per thread, or guard a shared one with a lock.

``predict_stream(batches)`` pipelines a sequence of batches (the letterbox of the next batch runs while the
GPU works on the current one) and yields one ``list[Detections]`` per batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import Y9Error
from y9deploy.runtime.backend import batch_chunks
from y9deploy.runtime.busy import BusyGuard
from y9deploy.runtime.image_file import read_image  # re-exported: y9deploy.runtime.detector.read_image
from y9deploy.runtime.loading import open_backend
from y9deploy.runtime.options import PredictOptions, resolve_options

PRE, INFER, POST = "pre", "infer", "post"


class NullTimer:
    """The stage timer used outside benchmarks: does nothing."""

    def mark(self, stage: str) -> None:
        pass


_NULL = NullTimer()


class Detector:
    """YOLOv9 detector over a TensorRT engine, an ONNX model or a checkpoint.

    Args:
        path: ``.engine``/``.trt``/``.plan`` (with its ``.json`` manifest), ``.onnx`` or ``.pt``; None: the
            embedded default model (``y9deploy.default_model_path()``, 80 COCO classes).
        device: None (CUDA when the backend can use a GPU here, else CPU), "cpu", "cuda", "cuda:N".
        conf: score threshold (a detection needs a score > conf), or one threshold per class.
        iou: IoU threshold of the NMS.
        max_det: most detections per image.
        classes: keep only these class ids (None: all).
        agnostic: class-agnostic NMS.
        imgsz: network input for ``.pt`` files (default: the size the checkpoint records, else 640); ONNX models and engines fix their own.
        half: FP16 for ``.pt`` on CUDA (default True there).
        cuda_graph: replay the network as a CUDA graph (torch and TensorRT on CUDA; default True).
        preprocess: on a CUDA backend with torch installed: "auto"/"hybrid" (letterbox by OpenCV threads, the
            compact uint8 image uploaded, colour/layout/normalisation on the GPU), "gpu" (whole frames uploaded,
            letterboxed on the GPU), "cpu" (the whole blob made on the CPU, then uploaded). Without torch or
            CUDA everything runs on the host.
        postprocess: on a CUDA backend with torch: "auto"/"gpu" (batched decode + NMS on the GPU) or "cpu"
            (the raw output downloaded, decode + NMS on the host).
        compile: ``torch.compile`` a ``.pt`` model on CUDA (slow first call per batch size).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        device: str | int | None = None,
        conf: float | Any = 0.25,
        iou: float = 0.45,
        max_det: int = 300,
        classes: list[int] | None = None,
        agnostic: bool = False,
        imgsz: int | tuple[int, int] | None = None,
        half: bool | None = None,
        cuda_graph: bool = True,
        preprocess: str = "auto",
        postprocess: str = "auto",
        compile: bool = False,
    ) -> None:
        if preprocess not in ("auto", "hybrid", "gpu", "cpu"):
            raise ValueError(f"preprocess={preprocess!r}; expected 'auto', 'hybrid', 'gpu' or 'cpu'.")
        if postprocess not in ("auto", "gpu", "cpu"):
            raise ValueError(f"postprocess={postprocess!r}; expected 'auto', 'gpu' or 'cpu'.")
        if path is None:
            from y9deploy.default_model import default_model_path

            path = default_model_path()
        if not isinstance(path, (str, Path)):
            raise TypeError(
                f"path is a {type(path).__name__}; expected the path of a .engine, .onnx or .pt file."
            )
        self.path = Path(path)
        self._guard = BusyGuard(str(self.path))
        self._closed = True
        stream = _maybe_torch_stream(self.path, device)
        self._stream = stream  # kept alive as long as the backend may run on it
        self.backend = open_backend(
            self.path,
            device=device,
            imgsz=imgsz,
            half=half,
            cuda_graph=cuda_graph,
            stream=None if stream is None else int(stream.cuda_stream),
            compile=compile,
        )
        self._closed = False
        self._gpu = None
        self._host_blob: np.ndarray | None = None
        try:
            self._setup(conf, iou, max_det, classes, agnostic, preprocess, postprocess, stream)
        except BaseException:
            self.close()  # a bad option must not leave the model loaded
            raise

    def _setup(
        self,
        conf: Any,
        iou: float,
        max_det: int,
        classes: Any,
        agnostic: bool,
        preprocess: str,
        postprocess: str,
        stream: Any,
    ) -> None:
        self.info = self.backend.info
        self.names: list[str] = list(self.info.names)
        self.imgsz: tuple[int, int] = tuple(self.backend.input_hw)  # type: ignore[assignment]
        self.end2end: bool = bool(self.backend.end2end)
        self.defaults: PredictOptions = resolve_options(
            None,
            dict(conf=conf, iou=iou, max_det=max_det, classes=classes, agnostic=agnostic),
            nc=len(self.names),
            end2end=self.end2end,
        )
        on_cuda = str(self.backend.device).startswith("cuda")
        if on_cuda:
            from y9deploy.runtime.gpu_pipeline import GpuPipeline, torch_cuda_ready

            if torch_cuda_ready():
                self._gpu = GpuPipeline(
                    self.backend,
                    self.info,
                    stream=stream,
                    pre="hybrid" if preprocess == "auto" else preprocess,
                    post=postprocess,
                )
        if preprocess == "gpu" and self._gpu is None:
            raise ValueError(
                f"preprocess='gpu' needs a CUDA backend and torch with CUDA; {self.path.name} runs on "
                f"{'a CUDA device without torch' if on_cuda else 'the CPU'}."
            )

    # ---------------------------------------------------------------- public API
    @property
    def device(self) -> str:
        return str(self.backend.device)

    def __repr__(self) -> str:
        where = "cpu" if self._gpu is None else self._gpu.pre
        return (
            f"Detector({str(self.path)!r}, backend={self.backend.name}, device={self.device}, imgsz={self.imgsz}, "
            f"classes={len(self.names)}, end2end={self.end2end}, preprocess={where})"
        )

    def predict(self, source: Any, **overrides: Any) -> Any:
        """Detect objects.

        Args:
            source: one frame (ndarray[H, W, 3] uint8 BGR), a batch ndarray[B, H, W, 3], an image path, or a
                list of frames and/or image paths.
            **overrides: per-call ``conf``, ``iou``, ``max_det``, ``classes``, ``agnostic``.
        Returns:
            ``Detections`` for one frame or path; ``list[Detections]`` for a list or a 4-D batch.
        """
        return self._predict(source, overrides, _NULL)

    def predict_stream(self, batches: Iterable[Any], **overrides: Any) -> Iterator[list[Any]]:
        """Detect objects in a sequence of batches, pipelined: on a CUDA backend with torch, the host
        pre-processing (letterbox) and upload of the next batch run in a background thread, into the second of
        two staging buffers, while the device works on the current one, and the Detections of batch i are built
        while the device runs batch i+1 (``runtime.gpu_stream``). On the host path the batches run one after
        the other.

        Args:
            batches: an iterable (a generator, e.g. of video frames) of batches, each a list of frames
                (ndarray[H, W, 3] uint8 BGR) and/or image paths, or a batch ndarray[B, H, W, 3].
            **overrides: per-call ``conf``, ``iou``, ``max_det``, ``classes``, ``agnostic`` (all batches).
        Returns:
            an iterator of ``list[Detections]``, one list per batch, in order: the same detections as
            ``predict`` on each batch. Memory is bounded (two staging buffers; batches are pulled from
            ``batches`` at most two ahead of the results). Until the stream ends or is closed, other threads
            calling this Detector get DetectorBusyError.
        """
        if self.backend is None:
            raise Y9Error(f"this Detector for {self.path} was closed; create a new one.")
        if isinstance(batches, (np.ndarray, str, Path)) or not hasattr(batches, "__iter__"):
            raise TypeError(
                f"predict_stream() got a {type(batches).__name__}; expected an iterable of batches (each a list "
                "of frames or an ndarray[B, H, W, 3]); for one batch use predict()."
            )
        opts = resolve_options(self.defaults, overrides, nc=len(self.names), end2end=self.end2end)
        return self._stream_batches(iter(batches), opts, _NULL)

    def _stream_batches(
        self, batches: Iterator[Any], opts: PredictOptions, timer: Any
    ) -> Iterator[list[Any]]:
        with self._guard.enter("predict_stream"):  # held until the stream is exhausted or closed
            yield from self._stream_unguarded(batches, opts, timer)

    def _stream_unguarded(
        self, batches: Iterator[Any], opts: PredictOptions, timer: Any
    ) -> Iterator[list[Any]]:
        def chunks() -> Iterator[tuple[list[np.ndarray], int, bool]]:
            for batch in batches:
                frames, _ = self._frames(batch)
                spans = batch_chunks(len(frames), self.backend.batch_range)
                for j, (start, stop, padded) in enumerate(spans):
                    yield frames[start:stop], padded, j == len(spans) - 1

        if self._gpu is None:
            results = ((self._run_host(f, padded, opts, timer), last) for f, padded, last in chunks())
        else:
            results = self._gpu.run_stream(chunks(), opts, timer)
        done: list[Any] = []
        for dets, last in results:
            done += dets
            if last:
                yield done
                done = []
                if self.backend is None:
                    raise Y9Error(f"this Detector for {self.path} was closed during predict_stream().")

    def warmup(self, batch: int = 1, frame_hw: tuple[int, int] | None = None, runs: int = 2) -> None:
        """Run ``runs`` dummy predictions of ``batch`` grey frames (cuDNN autotuning, CUDA graph capture)."""
        h, w = frame_hw or self.imgsz
        frames = [np.full((h, w, 3), 114, np.uint8) for _ in range(batch)]
        for _ in range(runs):
            self._predict(frames, {}, _NULL)

    def close(self) -> None:
        """Free the backend, buffers and CUDA graphs; idempotent."""
        if getattr(self, "_closed", True) and getattr(self, "backend", None) is None:
            return
        with self._guard.enter("close"):
            self._close()

    def _close(self) -> None:
        backend, self.backend = getattr(self, "backend", None), None
        gpu, self._gpu = getattr(self, "_gpu", None), None
        self._host_blob = None
        self._closed = True
        if gpu is not None:
            gpu.close()
        if backend is not None:
            backend.close()
        self._stream = None  # after the backend: onnxruntime may run on it

    def __enter__(self) -> Detector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    # ---------------------------------------------------------------- internals
    def _frames(self, source: Any) -> tuple[list[np.ndarray], bool]:
        """source -> (frames, single); every frame checked (HxWx3 uint8, non-empty)."""
        from y9deploy.preprocess import check_frame, check_frames

        if source is None:
            raise TypeError(
                "predict() got None; expected an HxWx3 uint8 BGR frame, a list of frames, or image paths."
            )
        if isinstance(source, (str, Path)):
            return [read_image(source)], True
        if isinstance(source, np.ndarray):
            if source.ndim == 4:
                return check_frames(source), False
            return [check_frame(source, 0)], True
        if isinstance(source, (list, tuple)):
            if len(source) == 0:
                raise ValueError(
                    f"predict() got an empty {type(source).__name__}; expected at least one frame or image path."
                )
            frames = [
                read_image(s) if isinstance(s, (str, Path)) else check_frame(s, i)
                for i, s in enumerate(source)
            ]
            return frames, False
        raise TypeError(
            f"predict() got a {type(source).__name__}; expected an HxWx3 uint8 BGR frame (numpy.ndarray), a list "
            "of frames, or image paths."
        )

    def _predict(self, source: Any, overrides: dict[str, Any], timer: Any) -> Any:
        with self._guard.enter("predict"):
            return self._predict_unguarded(source, overrides, timer)

    def _predict_unguarded(self, source: Any, overrides: dict[str, Any], timer: Any) -> Any:
        if self.backend is None:
            raise Y9Error(f"this Detector for {self.path} was closed; create a new one.")
        opts = resolve_options(self.defaults, overrides, nc=len(self.names), end2end=self.end2end)
        frames, single = self._frames(source)
        results: list[Any] = []
        for start, stop, padded in batch_chunks(len(frames), self.backend.batch_range):
            chunk = frames[start:stop]
            if self._gpu is not None:
                results += self._gpu.run(chunk, padded, opts, timer)
            else:
                results += self._run_host(chunk, padded, opts, timer)
        return results[0] if single else results

    def _blob(self, padded: int) -> np.ndarray:
        """A reused host input buffer [padded, 3, H, W] (grown, never shrunk)."""
        h, w = self.imgsz
        dt = self.backend.input_dtype
        if self._host_blob is None or self._host_blob.shape[0] < padded or self._host_blob.dtype != dt:
            self._host_blob = np.zeros((padded, 3, h, w), dt)
        return self._host_blob[:padded]

    def _run_host(self, frames: list[np.ndarray], padded: int, opts: PredictOptions, timer: Any) -> list[Any]:
        from y9deploy.preprocess import prepare

        timer.mark("start")
        lb = self.info.letterbox
        blob = self._blob(padded)
        _, infos = prepare(
            frames,
            self.imgsz,
            dtype=blob.dtype,
            auto=False,
            scaleup=bool(lb.get("scaleup", True)),
            stride=int(lb.get("stride", 32)),
            color=lb.get("color", 114),
            out=blob[: len(frames)],
        )
        timer.mark(PRE)
        outputs = self.backend.infer(blob, opts.extras(self.backend.extras))
        timer.mark(INFER)
        rows = host_rows(outputs, len(frames), opts, end2end=self.end2end)
        dets = [to_detections(r, info, self.names) for r, info in zip(rows, infos)]
        timer.mark(POST)
        return dets


def host_rows(outputs: dict[str, Any], n: int, opts: PredictOptions, *, end2end: bool) -> list[np.ndarray]:
    """Backend outputs (numpy) -> one (N, 6) float32 array per frame, rows (x1, y1, x2, y2, score, class) in
    network-input pixels, by descending score."""
    if end2end:
        from y9deploy.runtime.end2end import end2end_rows

        return end2end_rows(outputs, n, opts)
    from y9deploy.postprocess import postprocess

    pred = np.asarray(outputs["output0"] if "output0" in outputs else next(iter(outputs.values())))[:n]
    return postprocess(
        pred, conf=opts.conf, iou=opts.iou, agnostic=opts.agnostic, max_det=opts.max_det, classes=opts.classes
    )


def to_detections(rows: np.ndarray, info: Any, names: list[str]) -> Any:
    """(N, 6) rows in input pixels + the frame's LetterboxInfo -> Detections in frame pixels (clipped)."""
    from y9deploy.postprocess import to_detections as rows_to_detections

    return rows_to_detections(rows, info, names)


def _maybe_torch_stream(path: Path, device: Any) -> Any:
    """A torch CUDA stream for the Detector's GPU work, when the model will run on CUDA and torch sees a GPU."""
    from y9deploy.runtime.backend import parse_device

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
    from y9deploy.runtime.gpu_pipeline import torch_cuda_ready

    if not torch_cuda_ready():
        return None
    import torch

    return torch.cuda.Stream(torch.device(f"cuda:{index}"))
