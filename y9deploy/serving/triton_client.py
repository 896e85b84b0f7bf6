"""``TritonDetector``: the same ``Detections`` as ``Detector``, with the network served by Triton.

    det = TritonDetector("localhost:8000", "gelan-c")          # HTTP; "grpc://localhost:8001" for gRPC
    dets = det.predict(frame)                                  # y9's letterbox + decode + NMS around the server

The model's description (class names, input size, letterbox) comes from the server: the ``y9_metadata``
parameter that ``y9 triton`` writes into config.pbtxt. Pre-processing (``y9deploy.pre.host.prepare``) and
post-processing (``y9deploy.post.runner.PostRunner``, by ``y9core.post.choice.choose_post``: the host
implementation for the server's numpy outputs) are the Detector's host path, so the detections are the same as a
``Detector`` over the same model file. Needs ``tritonclient`` (``pip install "y9[serve]"``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError, ServingError
from y9core.model_facts import ModelFacts
from y9deploy.post.options import PredictOptions, resolve_options
from y9deploy.runtime.backends.backend import parse_metadata
from y9deploy.runtime.pipeline import batch_chunks
from y9deploy.serving.triton_repo import METADATA_KEY, metadata_props

PROTOCOLS = ("http", "grpc")
_NUMPY = {"FP32": np.float32, "FP16": np.float16}


def _client_module(protocol: str) -> Any:
    try:
        if protocol == "grpc":
            import tritonclient.grpc as module
        else:
            import tritonclient.http as module
    except ImportError as exc:
        raise BackendUnavailableError(
            f"TritonDetector over {protocol} needs tritonclient: pip install 'tritonclient[http,grpc]' "
            "(or pip install 'y9[serve]')."
        ) from exc
    return module


def split_url(url: str, protocol: str | None) -> tuple[str, str]:
    """``"grpc://host:8001"`` / ``"http://host:8000"`` / ``"host:8000"`` -> (protocol, "host:port")."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"url={url!r}; expected 'host:port', 'http://host:port' or 'grpc://host:port'.")
    scheme, sep, rest = url.strip().partition("://")
    if sep:
        if scheme not in PROTOCOLS:
            raise ValueError(f"url {url!r} has the scheme {scheme!r}; expected http:// or grpc://.")
        if protocol is not None and protocol != scheme:
            raise ValueError(f"url {url!r} says {scheme} but protocol={protocol!r}.")
        return scheme, rest.rstrip("/")
    protocol = protocol or "http"
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol={protocol!r}; expected 'http' or 'grpc'.")
    return protocol, url.strip().rstrip("/")


class TritonDetector:
    """A Detector whose network runs on a Triton Inference Server.

    Args:
        url: the server, ``host:port`` (HTTP, default port 8000) or ``grpc://host:port`` (default 8001).
        model: the model name in the server's repository (the folder ``y9 triton`` wrote).
        version: the model version ("" for the server's choice).
        protocol: "http" or "grpc" when ``url`` has no scheme.
        conf, iou, max_det, classes, agnostic: as ``Detector``.
        timeout: seconds for each request (HTTP network timeout; gRPC client timeout).
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        version: str = "",
        protocol: str | None = None,
        conf: float | Any = 0.25,
        iou: float = 0.45,
        max_det: int = 300,
        classes: list[int] | None = None,
        agnostic: bool = False,
        timeout: float = 60.0,
    ) -> None:
        self.protocol, self.url = split_url(url, protocol)
        self.model = str(model)
        self.version = str(version)
        self._timeout = float(timeout)
        self._mod = _client_module(self.protocol)
        if self.protocol == "grpc":
            self._client = self._mod.InferenceServerClient(self.url)
        else:
            self._client = self._mod.InferenceServerClient(
                self.url, connection_timeout=self._timeout, network_timeout=self._timeout
            )
        try:
            self._describe()
            self.defaults: PredictOptions = resolve_options(
                None,
                dict(conf=conf, iou=iou, max_det=max_det, classes=classes, agnostic=agnostic),
                nc=len(self.names),
                end2end=False,
            )
        except BaseException:
            self.close()  # a failed start leaves no connection open
            raise

    # ------------------------------------------------------------------------------------------ server facts
    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from tritonclient.utils import InferenceServerException

        try:
            return fn(*args, **kwargs)
        except InferenceServerException as exc:
            raise ServingError(
                f"Triton at {self.protocol}://{self.url} failed to {what} for model {self.model!r}: "
                f"{exc.message() or exc}."
            ) from exc
        except (OSError, ConnectionError) as exc:  # refused, unreachable, timed out
            raise ServingError(
                f"Triton at {self.protocol}://{self.url} could not be reached to {what} ({exc}); is the server "
                "running and the port right (HTTP 8000, gRPC 8001 by default)?"
            ) from exc

    def _describe(self) -> None:
        ready = self._call("check readiness", self._client.is_model_ready, self.model, self.version)
        if not ready:
            raise ServingError(
                f"Triton at {self.protocol}://{self.url} does not have model {self.model!r} ready (not in its "
                "repository, or it failed to load: see the server log)."
            )
        if self.protocol == "grpc":
            config = self._call("read the model config", self._client.get_model_config, self.model,
                                self.version, as_json=True)["config"]  # fmt: skip
        else:
            config = self._call(
                "read the model config", self._client.get_model_config, self.model, self.version
            )
        where = f"model {self.model!r} on {self.protocol}://{self.url}"
        raw = (config.get("parameters") or {}).get(METADATA_KEY, {}).get("string_value")
        if not raw:
            raise ServingError(
                f"{where} has no {METADATA_KEY} parameter in its config; write its repository with `y9 triton` "
                "so that class names and the letterbox travel with it."
            )
        try:
            props = metadata_props(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            raise ServingError(f"{where}: its {METADATA_KEY} parameter is not a JSON object of metadata.") from None
        self.info: ModelFacts = parse_metadata(props, where=where)
        self.names: list[str] = list(self.info.names)
        self.imgsz: tuple[int, int] = _input_hw(props, where)
        inputs, outputs = config.get("input", []), config.get("output", [])
        if len(inputs) != 1 or not outputs:
            raise ServingError(f"{where} has inputs {inputs} / outputs {outputs}; expected one image input.")
        self.input_name = inputs[0]["name"]
        self.output_names = [o["name"] for o in outputs]
        dtype = str(inputs[0].get("data_type", "TYPE_FP32")).removeprefix("TYPE_")
        if dtype not in _NUMPY:
            raise ServingError(
                f"{where}: input {self.input_name} has data type {dtype}; expected FP32 or FP16."
            )
        self._datatype, self.input_dtype = dtype, np.dtype(_NUMPY[dtype])
        self.max_batch_size = int(config.get("max_batch_size", 0))
        dims = [int(d) for d in inputs[0].get("dims", [])]
        if self.max_batch_size > 0:
            self.batch_range = (1, self.max_batch_size)
        else:  # the batch is in the dims: a static model
            self.batch_range = (dims[0], dims[0])

    def __repr__(self) -> str:
        return (
            f"TritonDetector({self.protocol}://{self.url}, model={self.model!r}, imgsz={self.imgsz}, "
            f"classes={len(self.names)}, batch={self.batch_range})"
        )

    # ------------------------------------------------------------------------------------------ inference
    def infer(self, blob: np.ndarray) -> dict[str, np.ndarray]:
        """One request: ``blob`` ndarray[B, 3, H, W] (RGB, 0..1) -> the served network's outputs by name."""
        inp = self._mod.InferInput(self.input_name, list(blob.shape), self._datatype)
        if self.protocol == "grpc":
            inp.set_data_from_numpy(blob)
            outs = [self._mod.InferRequestedOutput(n) for n in self.output_names]
            kw: dict[str, Any] = {"client_timeout": self._timeout}
        else:
            inp.set_data_from_numpy(blob, binary_data=True)
            outs = [self._mod.InferRequestedOutput(n, binary_data=True) for n in self.output_names]
            kw = {}
        result = self._call("run inference", self._client.infer, self.model, [inp], model_version=self.version,
                            outputs=outs, **kw)  # fmt: skip
        return {n: result.as_numpy(n) for n in self.output_names}

    def predict(self, source: Any, **overrides: Any) -> Any:
        """As ``Detector.predict``: a frame, a batch ndarray[B, H, W, 3], an image path or a list of them ->
        ``Detections`` (one frame or path) or ``list[Detections]``."""
        from y9deploy.post.runner import PostRunner
        from y9deploy.pre.host import prepare

        opts = resolve_options(self.defaults, overrides, nc=len(self.names), end2end=False)
        frames, single = _frames(source)
        lb = self.info.letterbox
        results: list[Any] = []
        post = PostRunner(nc=len(self.names), names=self.names)  # numpy outputs: the host implementation
        for start, stop, padded in batch_chunks(len(frames), self.batch_range):
            chunk = frames[start:stop]
            blob = np.zeros((padded, 3, *self.imgsz), self.input_dtype)
            _, infos = prepare(chunk, self.imgsz, dtype=self.input_dtype, auto=False, scaleup=lb.scaleup,
                               stride=lb.stride, color=lb.color, out=blob[: len(chunk)])  # fmt: skip
            outputs = self.infer(blob)
            results += post.detections(post.submit(outputs, len(chunk), opts), infos)
        return results[0] if single else results

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()

    def __enter__(self) -> TritonDetector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _frames(source: Any) -> tuple[list[np.ndarray], bool]:
    """source -> (frames, single), with the Detector's checks and messages."""
    from pathlib import Path

    from y9deploy.pre.host import check_frame, check_frames
    from y9deploy.runtime.image_file import read_image

    if isinstance(source, (str, Path)):
        return [read_image(source)], True
    if isinstance(source, np.ndarray):
        return (check_frames(source), False) if source.ndim == 4 else ([check_frame(source, 0)], True)
    if isinstance(source, (list, tuple)) and source:
        return [
            read_image(s) if isinstance(s, (str, Path)) else check_frame(s, i) for i, s in enumerate(source)
        ], False
    raise TypeError(
        f"predict() got {type(source).__name__ if source is not None else None}; expected an HxWx3 uint8 BGR "
        "frame, a non-empty list of frames, or image paths."
    )


def _input_hw(props: dict[str, str], where: str) -> tuple[int, int]:
    """The served model's input (h, w): the metadata's ``imgsz`` (the file's input; the facts hold the trained
    size)."""
    try:
        h, w = json.loads(props.get("imgsz", ""))
        return int(h), int(w)
    except (ValueError, TypeError):
        raise ServingError(f"{where}: its metadata has no usable 'imgsz' (the input size).") from None
