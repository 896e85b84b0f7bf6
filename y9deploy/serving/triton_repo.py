"""A Triton Inference Server model repository for a y9 ONNX model or TensorRT engine.

    write_triton_repo("gelan-c.onnx", "models/", max_batch=8, instances=2)

writes ``models/gelan-c/config.pbtxt``, ``models/gelan-c/1/model.onnx`` (or ``1/model.plan`` for an engine)
and ``models/gelan-c/y9.json`` (the source file, the platform, the metadata and the model facts, ``facts``). The configuration has the input/output names, data types and dims of the
model, ``max_batch_size`` (an engine: its profile's maximum; an ONNX model with a dynamic batch: ``max_batch``;
a static batch: 0 with the batch in the dims), dynamic batching, instance groups, and y9's metadata (class
names, input size, letterbox) as the model parameter ``y9_metadata`` (JSON), which ``TritonDetector`` reads
from the server: a client needs only the URL and the model name.

The facts come from the file itself: the ONNX graph (needs ``onnx``) or the engine manifest ``<engine>.json``
(no TensorRT needed). The configuration is Triton's own ``ModelConfig`` protobuf message (``model_config_pb2``,
shipped by tritonclient: the ``serve`` extra), written with protobuf's ``text_format``. y9 serves raw models
(``output0`` [B, 4+nc, A]); decoding and NMS run in the client.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError, ModelFileError
from y9core.model_facts import ModelFacts
from y9deploy.facts_metadata import facts_to_props
from y9deploy.runtime.backends.loading import ENGINE_SUFFIXES, ONNX_SUFFIXES

DEFAULT_ONNX_MAX_BATCH = 8
QUEUE_DELAY_US = 100
METADATA_KEY = "y9_metadata"
TRITON_TYPES = {
    "float32": "TYPE_FP32",
    "float16": "TYPE_FP16",
    "float64": "TYPE_FP64",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "int8": "TYPE_INT8",
    "uint8": "TYPE_UINT8",
    "bool": "TYPE_BOOL",
}
KINDS = ("auto", "gpu", "cpu")


@dataclass(frozen=True)
class TensorSpec:
    """One model input or output: ``shape`` with -1 for a dynamic dimension, ``dtype`` a numpy dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def triton_type(self) -> str:
        if self.dtype not in TRITON_TYPES:
            raise ModelFileError(
                f"tensor {self.name} has dtype {self.dtype}, which Triton config cannot name."
            )
        return TRITON_TYPES[self.dtype]


@dataclass
class ServedModel:
    """What the repository describes: the file, its platform, tensors and batch facts."""

    path: Path
    platform: str  # "onnxruntime_onnx" | "tensorrt_plan"
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    batch: tuple[int, int, int] | None  # engine profile (min, opt, max); None: ONNX dynamic batch
    static_batch: int | None  # the fixed batch of a static model
    metadata: dict[str, Any]  # the file's metadata (facts_to_props) as JSON values: the y9_metadata parameter
    facts: ModelFacts | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class TritonRepo:
    """``y9 triton``'s result."""

    root: Path
    model_dir: Path
    config_path: Path
    model_file: Path
    name: str
    platform: str
    max_batch_size: int
    instances: int
    config_text: str
    notes: list[str] = field(default_factory=list)


def _onnx_model(path: Path) -> ServedModel:
    try:
        import onnx  # noqa: F401 - inspect_onnx reads the graph with it
    except ImportError as exc:
        raise BackendUnavailableError(
            f"writing a Triton repository for {path.name} needs the onnx package to read the graph: pip install onnx."
        ) from exc
    from y9deploy.engine.onnx_info import detector_facts, inspect_onnx

    info = inspect_onnx(path, check_detector=False)
    from onnx import helper

    graph = info.model.graph
    initializers = {i.name for i in graph.initializer}

    def spec(vi: Any) -> TensorSpec:
        dims = tuple(
            int(d.dim_value) if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim
        )
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)).name
        return TensorSpec(vi.name, dims, dtype)

    inputs = [spec(vi) for vi in graph.input if vi.name not in initializers]
    outputs = [spec(vi) for vi in graph.output]
    _check_raw(path, info.end2end or any(o.name == "num_dets" for o in outputs), inputs)
    info.facts = detector_facts(info)
    meta = json_values(facts_to_props(info.facts, input_hw=info.imgsz, dynamic_batch=info.batch is None))
    return ServedModel(path, "onnxruntime_onnx", inputs, outputs, None, info.batch, meta, info.facts)


def _engine_model(path: Path) -> ServedModel:
    from y9deploy.engine.manifest import manifest_path, read_manifest

    m = read_manifest(path)
    inputs = [TensorSpec(t["name"], tuple(int(d) for d in t["shape"]), str(t["dtype"])) for t in m.inputs]
    outputs = [TensorSpec(t["name"], tuple(int(d) for d in t["shape"]), str(t["dtype"])) for t in m.outputs]
    _check_raw(path, m.end2end, inputs)
    facts = m.model_facts(manifest_path(path))
    meta = json_values(facts_to_props(facts, input_hw=(m.imgsz[0], m.imgsz[1]), dynamic_batch=m.batch[0] != m.batch[2]))
    notes = []
    if m.flavour == "tensorrt_rtx":
        notes.append(
            f"{path.name} was built by TensorRT-RTX {m.trt_version}: Triton's tensorrt_plan backend loads engines "
            "of the full TensorRT of its own release only; serve the ONNX model, or build the engine with that "
            "TensorRT (the repository layout and config are the same)."
        )
    else:
        notes.append(
            f"{path.name} was built by TensorRT {m.trt_version} for {m.compute_capability}: serve it with a "
            "Triton release of that exact TensorRT version, on GPUs of that compute capability."
        )
    static = inputs[0].shape[0] if inputs[0].shape[0] > 0 else None
    return ServedModel(path, "tensorrt_plan", inputs, outputs, tuple(m.batch), static, meta, facts, notes)


FLAGS = ("end2end", "dynamic_batch", "half")
JSON_KEYS = ("names", "stride", "imgsz", "trained_imgsz", "letterbox", "nms_defaults")


def json_values(props: dict[str, str]) -> dict[str, Any]:
    """Metadata strings as JSON values (lists, objects, booleans) for the config parameter a person reads;
    ``metadata_props`` turns them back."""
    return {k: (v == "1") if k in FLAGS else json.loads(v) if k in JSON_KEYS and v else v for k, v in props.items()}


def metadata_props(info: dict[str, Any]) -> dict[str, str]:
    """The ``y9_metadata`` parameter's object (``json_values``) back to the metadata strings ``parse_metadata``
    reads (JSON for structured values, "1"/"0" for flags)."""
    return {k: v if isinstance(v, str) else ("1" if v else "0") if isinstance(v, bool) else json.dumps(v)
            for k, v in info.items()}  # fmt: skip


def _check_raw(path: Path, end2end: bool, inputs: list[TensorSpec]) -> None:
    if end2end:
        raise ModelFileError(
            f"{path} is an end-to-end model (NMS inside); y9 triton serves raw models, whose NMS runs in "
            "TritonDetector: export it without --end2end."
        )
    if [t.name for t in inputs] != ["images"] or len(inputs[0].shape) != 4:
        raise ModelFileError(
            f"{path} has inputs {[(t.name, list(t.shape)) for t in inputs]}; expected one input 'images' "
            "[B, 3, H, W] (a model exported by `y9 export`)."
        )


def describe_model(path: str | Path) -> ServedModel:
    """Read what the repository needs from an ONNX file or an engine (with its manifest)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {path} does not exist." if not path.exists() else
                                f"model path {path} is not a file.")  # fmt: skip
    suffix = path.suffix.lower()
    if suffix in ONNX_SUFFIXES:
        return _onnx_model(path)
    if suffix in ENGINE_SUFFIXES:
        return _engine_model(path)
    raise ValueError(
        f"{path} has suffix {suffix or '(none)'!r}; y9 triton takes an ONNX model (.onnx) or a TensorRT engine "
        f"({', '.join(ENGINE_SUFFIXES)}); export a .pt checkpoint first with `y9 export`."
    )


def _model_config_module() -> tuple[Any, Any]:
    """Triton's ``model_config_pb2`` (shipped by tritonclient) and protobuf's ``text_format``."""
    try:
        from google.protobuf import text_format
        from tritonclient.grpc import model_config_pb2
    except ImportError as exc:
        raise BackendUnavailableError(
            "writing a Triton model configuration needs Triton's protobuf definitions from the tritonclient "
            f"package ({exc}); install them with: pip install 'y9[serve]'."
        ) from exc
    return model_config_pb2, text_format


def build_config(
    model: ServedModel, name: str, *, max_batch_size: int, preferred: list[int], instances: int, kind: str
) -> Any:
    """Triton's ``ModelConfig`` message (``tritonclient.grpc.model_config_pb2``) for ``model``: tensors, batching,
    instance group and y9's metadata parameter."""
    pb, _ = _model_config_module()
    lead = 1 if max_batch_size > 0 else 0  # Triton adds the batch dimension itself when max_batch_size > 0
    cfg = pb.ModelConfig(name=name, platform=model.platform, max_batch_size=max_batch_size)
    for tensors, add in ((model.inputs, cfg.input.add), (model.outputs, cfg.output.add)):
        for t in tensors:
            add(name=t.name, data_type=pb.DataType.Value(t.triton_type), dims=list(t.shape[lead:]))
    if max_batch_size > 0:
        cfg.dynamic_batching.preferred_batch_size.extend(preferred)
        cfg.dynamic_batching.max_queue_delay_microseconds = QUEUE_DELAY_US
    group = cfg.instance_group.add(count=instances)
    if kind != "auto":
        group.kind = pb.ModelInstanceGroup.Kind.Value(f"KIND_{kind.upper()}")
    cfg.parameters[METADATA_KEY].string_value = json.dumps(model.metadata, sort_keys=True)
    return cfg


def render_config(
    model: ServedModel, name: str, *, max_batch_size: int, preferred: list[int], instances: int, kind: str
) -> str:
    """The config.pbtxt text: ``build_config``'s message in protobuf text format (``text_format``)."""
    _, text_format = _model_config_module()
    cfg = build_config(model, name, max_batch_size=max_batch_size, preferred=preferred, instances=instances,
                       kind=kind)  # fmt: skip
    return text_format.MessageToString(cfg)


def _batching(model: ServedModel, max_batch: int | None) -> tuple[int, list[int]]:
    where = model.path
    if model.static_batch is not None:
        if max_batch is not None and max_batch != 0:
            raise ValueError(
                f"{where} has a static batch of {model.static_batch}, so --max-batch {max_batch} cannot apply; "
                "export with --dynamic-batch (and build the engine with a batch profile) to batch on the server."
            )
        return 0, []
    if model.batch is not None:  # engine profile
        lo, opt, hi = model.batch
        if lo > 1:
            raise ValueError(
                f"{where} has the batch profile {lo}:{opt}:{hi}; Triton sends batches of 1 to {hi}, so the "
                f"profile must start at 1: rebuild it with --batch 1:{opt}:{hi}."
            )
        if max_batch is None:
            max_batch = hi
        if not 1 <= max_batch <= hi:
            raise ValueError(
                f"--max-batch {max_batch} is outside {where}'s batch profile {lo}:{opt}:{hi}; expected 1 to {hi}."
            )
        return max_batch, sorted({b for b in (opt, max_batch) if b <= max_batch})
    max_batch = DEFAULT_ONNX_MAX_BATCH if max_batch is None else max_batch
    if max_batch < 1:
        raise ValueError(f"--max-batch {max_batch}; expected a positive batch size for {where}.")
    return max_batch, [max_batch]


_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def write_triton_repo(
    model: str | Path,
    out: str | Path,
    *,
    name: str | None = None,
    max_batch: int | None = None,
    instances: int = 1,
    kind: str = "auto",
    overwrite: bool = False,
) -> TritonRepo:
    """Write (or, with ``overwrite``, replace) the model folder ``out/<name>`` of a Triton model repository.

    Args:
        model: a y9 ONNX model or TensorRT engine (with its ``<engine>.json`` manifest).
        out: the repository root (created if needed; other models in it are left alone).
        name: the model name on the server (default: the file's stem).
        max_batch: ``max_batch_size`` (default: the engine profile's maximum, or 8 for a dynamic ONNX batch).
        instances: model instances (``instance_group`` count).
        kind: "auto" (Triton decides: GPU when present), "gpu" or "cpu"; engines run only on GPUs.
    """
    served = describe_model(model)
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; expected one of {', '.join(KINDS)}.")
    if served.platform == "tensorrt_plan" and kind == "cpu":
        raise ValueError(
            f"{served.path} is a TensorRT engine, which runs only on GPUs; use kind 'gpu' or 'auto'."
        )
    if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
        raise ValueError(f"instances={instances!r}; expected a positive number of model instances.")
    name = name or _NAME_RE.sub("_", served.path.stem)
    if not name or name in (".", "..") or _NAME_RE.search(name):
        raise ValueError(f"model name {name!r} is not usable; expected letters, digits, '_', '-' or '.'.")
    max_batch_size, preferred = _batching(served, max_batch)
    kind = "gpu" if served.platform == "tensorrt_plan" and kind == "auto" else kind
    root = Path(out)
    model_dir = root / name
    if model_dir.resolve() in served.path.resolve().parents:
        raise ValueError(
            f"{served.path} lies inside {model_dir}, which would be replaced; choose another --output."
        )
    if model_dir.exists() and not overwrite:
        raise ValueError(
            f"{model_dir} already exists (the model folder of an earlier run); expected a new one: choose another "
            "--name, or pass --exist-ok (overwrite=True) to replace it."
        )
    text = render_config(served, name, max_batch_size=max_batch_size, preferred=preferred,
                         instances=instances, kind=kind)  # fmt: skip
    file_name = "model.onnx" if served.platform == "onnxruntime_onnx" else "model.plan"
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:  # built beside, then renamed: a stopped run leaves no half-written model folder
        (tmp / "1").mkdir()
        shutil.copyfile(served.path, tmp / "1" / file_name)
        (tmp / "config.pbtxt").write_text(text, encoding="utf-8")
        sidecar = {"source": str(served.path), "platform": served.platform, **served.metadata,
                   "facts": served.facts.to_dict() if served.facts else None}  # fmt: skip
        (tmp / "y9.json").write_text(json.dumps(sidecar, indent=2) + "\n", encoding="utf-8")
        if model_dir.exists():
            shutil.rmtree(model_dir)
        os.replace(tmp, model_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return TritonRepo(root, model_dir, model_dir / "config.pbtxt", model_dir / "1" / file_name, name,
                      served.platform, max_batch_size, instances, text, list(served.notes))  # fmt: skip
