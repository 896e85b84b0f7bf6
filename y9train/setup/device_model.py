"""What a training or validation run decides before its first step: device, AMP mode, the model (built by name or
loaded from a checkpoint, checked against the data's classes, optionally re-headed), the run folder, seeds.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import numpy as np
import torch

from y9core.device_spec import parse_device
from y9core.errors import BackendUnavailableError, DataError, ModelFileError
from y9core.files.run_dir import RunLock, check_output_dir, resolve_output_dir
from y9train.models import MODEL_NAMES, YOLO, build_model
from y9train.models.head import init_head_biases

log = logging.getLogger("y9train")


def resolve_device(spec: str | int | None) -> torch.device:
    """A device option (``y9core.device_spec.parse_device``: None/"auto" the first GPU, else the CPU; "cpu"; "cuda",
    "gpu", "cuda:N", N) -> the torch device, checked to exist."""
    kind, index = parse_device(spec)
    if kind == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise BackendUnavailableError(
            f"device={spec!r} asks for a GPU but this torch build sees no CUDA device; use device=cpu."
        )
    if index >= torch.cuda.device_count():
        raise ValueError(
            f"device={spec!r}: there are {torch.cuda.device_count()} CUDA device(s); expected an index below that."
        )
    return torch.device(f"cuda:{index}")


def resolve_amp(mode: str, device: torch.device) -> tuple[torch.dtype | None, bool]:
    """``(autocast dtype or None, use a GradScaler)`` for ``mode`` (auto | bf16 | fp16 | off) on ``device``.

    auto: bf16 on GPUs that support it, else fp16 (with a GradScaler); off on CPU.
    """
    if mode == "off" or (mode == "auto" and device.type != "cuda"):
        return None, False
    if mode == "auto":
        return (torch.bfloat16, False) if torch.cuda.is_bf16_supported() else (torch.float16, True)
    if mode == "bf16":
        return torch.bfloat16, False
    if mode == "fp16":
        if device.type != "cuda":
            raise ValueError(
                "amp=fp16 needs a CUDA device (it uses a GradScaler); use amp=bf16 or amp=off on CPU."
            )
        return torch.float16, True
    raise ValueError(f"amp={mode!r}; expected auto, bf16, fp16 or off.")


def fp16_as_official(requested: bool, device: torch.device, amp_dtype: torch.dtype | None) -> bool:
    """Whether a switch that copies train_dual.py's fp16 behaviour takes effect (``Hyp.ema_fp16``: the EMA fp16 from
    its first validation; ``Hyp.loss_fp16``: the loss's fp16 rounding): only where train_dual.py's does, a CUDA device
    training under fp16 autocast; on a CPU, with bf16 or without AMP the run stays float32 there."""
    return bool(requested) and device.type == "cuda" and amp_dtype == torch.float16


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run_folder_of(last: Path) -> Path:
    """The run folder a resumed ``last.pt`` belongs to: the folder holding its ``weights/`` folder (wherever the run
    was copied or moved: the ``save_dir`` recorded inside is history, not a target)."""
    last = Path(last)
    if last.parent.name != "weights":
        raise ModelFileError(
            f"{last}: a resumed run writes into its own run folder, but this file is not in one (expected "
            "RUN/weights/last.pt, beside weights/best.pt and RUN/results.csv); pass the run folder or its "
            "weights/last.pt."
        )
    return last.parent.parent


def _named_folder(cfg) -> tuple[Path, str] | None:
    """A new run's folder as the user named it, and how (``save_dir``, else ``project/name``); None: numbered."""
    if cfg.save_dir:
        return Path(cfg.save_dir), "save_dir"
    return (Path(cfg.project) / cfg.name, "--name") if cfg.name else None


def check_run_dir(cfg) -> None:
    """Before the set-up: a new run's named folder that ``open_run_dir`` would refuse is refused now, so the user
    does not wait for the model and data first (nothing is created)."""
    if (named := _named_folder(cfg)) is not None:
        check_output_dir(named[0], exist_ok=cfg.exist_ok, inputs=[cfg.data], option=named[1])


def open_run_dir(cfg, resumed: Path | None, warn) -> tuple[Path, RunLock]:
    """The run folder this run writes, held for it (``RunLock``: a second writer is refused), with ``weights/``.

    A resume writes into the folder of the ``last.pt`` given (``run_folder_of``); a new run into ``cfg.save_dir``
    when set, else ``project/name`` when named (refused when it holds an earlier run, unless ``exist_ok``), else a
    new numbered folder ``project/exp``, ``exp2`` ... (``y9core.files.run_dir``)."""
    if resumed is not None:
        path = run_folder_of(resumed)
    elif (named := _named_folder(cfg)) is not None:
        run = resolve_output_dir(named[0], task="exp", exist_ok=cfg.exist_ok, inputs=[cfg.data], option=named[1])
        path = run.path
        if run.earlier:
            warn(run.reuse_note("its checkpoints, results.csv and steps.csv are replaced by this run's"))
    else:
        path = resolve_output_dir(None, task="exp", project=cfg.project, inputs=[cfg.data]).path
    lock = RunLock(path, warn=warn).acquire()
    try:
        (path / "weights").mkdir(parents=True, exist_ok=True)
    except BaseException:
        lock.release()
        raise
    return path, lock


def check_model_fits_data(model: YOLO, data_cfg, origin: str, *, allow_new_head: bool) -> None:
    """One sentence when the model's class count differs from the data's."""
    if model.nc == data_cfg.nc:
        return
    hint = (
        " (pass --new-head / new_head=True to train a new head for these classes on top of its backbone)"
        if allow_new_head
        else ""
    )
    raise DataError(
        f"model {origin} predicts {model.nc} classes but data.yaml {data_cfg.yaml_path} has nc={data_cfg.nc}; "
        f"expected the same number of classes{hint}."
    )


def rehead(model: YOLO, nc: int, names: list[str], imgsz: int) -> tuple[YOLO, int, int]:
    """A model of the same architecture for ``nc`` classes: every tensor whose name and shape still fit is copied
    (backbone, neck, box branches); the rest (class branches) is freshly initialised with prior biases.

    Returns ``(model, tensors kept, tensors in the new model)``.
    """
    new = YOLO(model.arch, nc=nc, names=names)
    init_head_biases(new.head, imgsz)
    old = model.state_dict()
    own = new.state_dict()
    keep = {k: v for k, v in old.items() if k in own and v.shape == own[k].shape}
    new.load_state_dict(keep, strict=False)
    return new, len(keep), len(own)


def load_model_for_training(
    spec: str, data_cfg, *, imgsz: int, new_head: bool = False, report=log.info
) -> YOLO:
    """A model to train: ``spec`` is a model name (fresh weights, prior head biases) or a checkpoint path.

    Raises one sentence for an unknown name / missing file, a fused checkpoint, or a class-count mismatch
    (unless ``new_head``, which re-heads the checkpoint for the data's classes).
    """
    if spec in MODEL_NAMES or spec.endswith((".yaml", ".yml")):
        model = build_model(spec, nc=data_cfg.nc, names=data_cfg.names)
        init_head_biases(model.head, imgsz)
        return model
    from y9train.checkpoint import load_checkpoint

    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(
            f"model {spec!r} is neither a model name ({', '.join(MODEL_NAMES)}) nor an existing checkpoint file."
        )
    model = load_checkpoint(path)
    if getattr(model, "fused", False):
        raise ModelFileError(
            f"{path}: holds a fused (deployment) model, which cannot be trained; expected an unfused checkpoint."
        )
    if model.nc != data_cfg.nc and new_head:
        model, kept, total = rehead(model, data_cfg.nc, data_cfg.names, imgsz)
        report(
            f"{path}: new head for {data_cfg.nc} classes; {kept} of {total} tensors kept from the checkpoint."
        )
        return model
    check_model_fits_data(model, data_cfg, str(path), allow_new_head=True)
    if list(model.names) != list(data_cfg.names):
        message = names_change_message(list(model.names), data_cfg, str(path))
        if message:
            log.warning(message)
        model.names = list(data_cfg.names)
    return model.train()


def names_change_message(old: list[str], data_cfg, origin: str, *, shown: int = 5) -> str:
    """The warning for fine-tuning a checkpoint on data whose class names differ ("" when the checkpoint's
    names are the ``class0, class1 ...`` placeholders of an unnamed model)."""
    if old == [f"class{i}" for i in range(len(old))]:
        return ""
    new = list(data_cfg.names)
    diffs = [f"{i}: {a!r} -> {b!r}" for i, (a, b) in enumerate(zip(old, new)) if a != b]
    more = f" and {len(diffs) - shown} more" if len(diffs) > shown else ""
    return (
        f"checkpoint {origin} was trained with other class names than data.yaml {data_cfg.yaml_path} "
        f"({len(diffs)} of {len(new)} differ: {'; '.join(diffs[:shown])}{more}); the checkpoint had "
        f"{_short(old)}; training goes on with the data's names."
    )


def _short(names: list[str], limit: int = 10) -> str:
    text = ", ".join(repr(n) for n in names[:limit])
    return f"[{text}{', ...' if len(names) > limit else ''}]"


def model_for_run(config, data_cfg, resume, device: torch.device, channels_last: bool, *, report=log.info) -> YOLO:
    """The model a run trains, in train mode on ``device`` (float32, channels-last when asked): the resumed
    checkpoint's (``resume``: ``(path, payload, state)``), or ``config.model`` by name or path (``load_model_for_training``;
    ``hyp.bias_prior_imgsz``, ``hyp.init_fp16_round``)."""
    hyp = config.hyp
    if resume:
        from y9train.checkpoints.load import model_from_payload

        path, payload, _ = resume
        model = model_from_payload(payload, str(path))
    else:
        prior = hyp.bias_prior_imgsz or config.imgsz or 640  # image size of the class-bias prior of a fresh head
        model = load_model_for_training(config.model, data_cfg, imgsz=prior, new_head=config.new_head, report=report)
        if hyp.init_fp16_round:
            model.half()  # the .float() below makes it float32 again: rounded to fp16 once
    model.set_grad_checkpointing(config.grad_checkpointing)
    fmt = torch.channels_last if channels_last else torch.preserve_format
    return model.float().train().to(device, memory_format=fmt)


def loss_for_run(model: YOLO, hyp, device: torch.device, amp_dtype: torch.dtype | None, *, report=log.info):
    """The ``DetectionLoss`` of a run from its hyperparameters; ``loss_fp16`` takes effect only under fp16 autocast on
    a GPU (``fp16_as_official``), and the log says which path the run took."""
    from y9train.loss import DetectionLoss

    loss_fp16 = fp16_as_official(hyp.loss_fp16, device, amp_dtype)
    if hyp.loss_fp16:
        report("loss_fp16: the loss rounds to fp16 as train_dual.py's autocast loss" if loss_fp16 else
               "loss_fp16: off here (it needs fp16 autocast); the loss stays float32")  # fmt: skip
    return DetectionLoss.from_model(
        model, label_smoothing=hyp.label_smoothing, box_gain=hyp.box, cls_gain=hyp.cls, dfl_gain=hyp.dfl,
        aux_weight=hyp.aux_weight, assigner_rule=hyp.assigner, fp16=loss_fp16,
    )  # fmt: skip


def cpu_count() -> int:
    """CPUs this process may run on."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
