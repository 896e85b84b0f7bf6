"""Training settings: hyperparameters (``Hyp``, from a YAML file) and run options (``TrainConfig``).

``Hyp`` holds what shapes the optimisation and augmentation (learning rates, schedule, warmup, EMA, clipping,
loss gains, label smoothing, augmentation probabilities); its defaults are ``configs/hyp-default.yaml``.
``TrainConfig`` holds what a run needs besides (data, model, image size, epochs, batch, device, output folder,
AMP, compile, checkpointing ...). ``key=value`` overrides (the CLI's extra arguments) reach either, by name.
Both are plain dataclasses of JSON-able values: they are stored in checkpoints for resume.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from y9core.errors import ConfigFileError
from y9core.files.yaml_load import load_yaml_file, parse_yaml_value
from y9core.shorten import quoted
from y9core.wording import did_you_mean
from y9train.data.augment import AUGMENT_RANGES, AugmentConfig
from y9train.value_ranges import FRACTION, NON_NEGATIVE, POSITIVE, Range, check_ranges

CONFIGS_DIR = Path(__file__).parents[1] / "configs"  # y9train/configs
DEFAULT_HYP_PATH = CONFIGS_DIR / "hyp-default.yaml"
#: recipe names ``resolve_hyp`` (``y9 train --hyp NAME``) accepts: ``configs/hyp-NAME.yaml``
RECIPES = ("default", "official")

OPTIMIZERS = ("auto", "sgd", "adamw")
ASSIGNERS = ("y9", "official")
EPOCH_ENDS = ("step", "drop")
LR_STEPS = ("batch", "epoch")
AMP_DTYPES = ("auto", "bf16", "fp16")
SCHEDULES = ("linear", "cosine", "cosine_restarts")
AMP_MODES = ("auto", "bf16", "fp16", "off")


# allowed values of the numeric hyperparameters (augmentation fields: y9train.data.augment.AUGMENT_RANGES)
HYP_RANGES: dict[str, Range] = {
    "lr0": Range(0.0, 1.0, lo_open=True, what="initial learning rate"),
    "lrf": Range(0.0, 1.0, what="final learning rate as a fraction of lr0"),
    "momentum": Range(0.0, 1.0, hi_open=True, what="SGD momentum / AdamW beta1"),
    "weight_decay": Range(0.0, 1.0, hi_open=True),
    "nbs": Range(1.0, what="nominal batch size"),
    "t0": POSITIVE,
    "t_mult": Range(1.0, what="cycle growth factor"),
    "eta_min": FRACTION,
    "warmup_epochs": NON_NEGATIVE,
    "warmup_min_iters": NON_NEGATIVE,
    "warmup_momentum": Range(0.0, 1.0, hi_open=True),
    "warmup_bias_lr": Range(0.0, 1.0, what="bias learning rate at the start of warmup"),
    "ema_decay": Range(0.0, 1.0, hi_open=True),
    "ema_tau": Range(0.0, what="EMA time constant in optimiser steps; 0 = auto, from the schedule length"),
    "ema_window": Range(0.0, 1.0, lo_open=True, what="fraction of the planned steps the auto EMA averages"),
    "average_epochs": Range(0.0, what="epochs; 0 = off"),
    "clip_grad": Range(0.0, what="0 = no clipping"),
    "box": Range(0.0, what="loss gain"),
    "cls": Range(0.0, what="loss gain"),
    "dfl": Range(0.0, what="loss gain"),
    "aux_weight": Range(0.0, what="loss gain"),
    "label_smoothing": Range(0.0, 1.0, hi_open=True),
    "close_mosaic": Range(0.0, what="epochs"),
    "patience": Range(0.0, what="epochs"),
    "bias_prior_imgsz": Range(0.0, what="pixels; 0 = the training size"),
    **{k: r for k, r in AUGMENT_RANGES.items() if k not in ("min_wh", "min_area_ratio", "max_aspect")},
}

# allowed values of the numeric run options checked beyond their type (validation thresholds)
RUN_RANGES: dict[str, Range] = {
    "conf": Range(0.0, 1.0, what="a score threshold"),
    "iou": Range(0.0, 1.0, what="an IoU threshold"),
}


@dataclass
class Hyp:
    """Hyperparameters (see ``configs/hyp-default.yaml`` for a commented copy of the defaults).

    Steadiness levers (``docs/training.md``, "Steadiness levers"), each at today's behaviour by default: ``ema_window``
    (the auto EMA's averaging span), ``average_epochs`` (the mean of the last epochs' EMA weights), ``lrf`` (the final
    learning rate) and ``close_mosaic`` (the epochs without mosaic).

    The recipe switches (``docs/training.md``, "Choosing a recipe"; ``configs/hyp-official.yaml`` sets the official value of
    each): ``optimizer`` auto (resolved once at setup, ``y9train.optimisation.optim.resolve_optimizer``), ``assigner``,
    ``warmup_accumulate_ramp``, ``epoch_end``, ``lr_step``, ``amp_dtype``, ``bias_prior_imgsz``, ``ema_fp16``,
    ``init_fp16_round`` and ``loss_fp16``.
    """

    # optimiser
    optimizer: str = "auto"  # auto (from the schedule length) | sgd (nesterov) | adamw
    lr0: float = 0.01  # initial learning rate
    lrf: float = 0.01  # final learning rate as a fraction of lr0 (linear, cosine)
    momentum: float = 0.937  # SGD momentum / AdamW beta1
    weight_decay: float = 0.0005  # on conv/linear weights only, scaled by batch * accumulate / nbs
    nbs: int = 64  # nominal batch: gradients accumulate over round(nbs / batch) batches per step
    warmup_accumulate_ramp: bool = False  # during warmup, batches per step ramp from 1 to round(nbs / batch)
    epoch_end: str = "step"  # step (a partial step at an epoch's end) | drop (zero the un-stepped gradients)
    lr_step: str = "batch"  # batch (schedule at fractional epochs) | epoch (constant within an epoch)
    amp_dtype: str = "auto"  # when TrainConfig.amp is auto: the recipe's autocast dtype, auto | bf16 | fp16
    # schedule (a function of fractional epochs, applied every step)
    schedule: str = "linear"  # linear | cosine | cosine_restarts
    t0: float = 10.0  # cosine_restarts: first cycle, epochs
    t_mult: float = 2.0  # cosine_restarts: cycle growth factor
    eta_min: float = 0.01  # cosine_restarts: lowest learning rate as a fraction of lr0
    # warmup
    warmup_epochs: float = 3.0
    warmup_min_iters: int = 100  # warmup lasts max(warmup_epochs * batches per epoch, this) batches
    warmup_momentum: float = 0.8
    warmup_bias_lr: float = 0.1
    # EMA of the weights: decay * (1 - exp(-updates / tau))
    ema_decay: float = 0.9999
    ema_tau: float = 0.0  # 0: auto, from the schedule length (y9train.optimisation.optim.resolve_auto)
    ema_window: float = 0.1  # ema_tau auto: the final EMA averages about this fraction of the planned steps
    average_epochs: int = 0  # > 0: the final weights are the mean of the last N epochs' EMA weights (weight_average)
    ema_fp16: bool = False  # GPU + fp16 autocast: the EMA fp16 from its first validation (train_dual.py)
    # gradients
    clip_grad: float = 10.0  # max total grad norm; 0 = no clipping (the norm is still logged)
    # loss
    assigner: str = "y9"  # y9 | official (candidate and conflict rules, y9train.loss.assigner)
    box: float = 7.5
    cls: float = 0.5
    dfl: float = 1.5
    aux_weight: float = 0.25  # auxiliary branch of yolov9-* models
    label_smoothing: float = 0.0
    label_smoothing_decay: bool = False  # decay linearly to 0 over the run
    loss_fp16: bool = False  # under fp16 autocast: round in the loss where train_dual.py's autocast loss does
    # model
    bias_prior_imgsz: int = 0  # image size of the class-bias prior of a fresh head; 0 = the training size
    init_fp16_round: bool = False  # starting weights rounded to fp16 once (train_dual.py's half().float())
    # schedule of the run
    close_mosaic: int = 15  # mosaic off for the last N epochs (the measured recipe; docs/training.md)
    patience: int = 100  # early stopping: epochs without a better fitness
    multi_scale: bool = False
    # augmentation: AugmentConfig's defaults (the official values) except scale and mixup (the measured recipe)
    mosaic: float = AugmentConfig.mosaic
    mixup: float = 0.0
    copy_paste: float = AugmentConfig.copy_paste
    degrees: float = AugmentConfig.degrees
    translate: float = AugmentConfig.translate
    scale: float = 0.5
    shear: float = AugmentConfig.shear
    hsv_h: float = AugmentConfig.hsv_h
    hsv_s: float = AugmentConfig.hsv_s
    hsv_v: float = AugmentConfig.hsv_v
    fliplr: float = AugmentConfig.fliplr
    flipud: float = AugmentConfig.flipud

    def __post_init__(self) -> None:
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        _check_choice("schedule", self.schedule, SCHEDULES)
        _check_choice("assigner", self.assigner, ASSIGNERS)
        _check_choice("epoch_end", self.epoch_end, EPOCH_ENDS)
        _check_choice("lr_step", self.lr_step, LR_STEPS)
        _check_choice("amp_dtype", self.amp_dtype, AMP_DTYPES)
        check_ranges(self, HYP_RANGES)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any], origin: str = "hyperparameters") -> Hyp:
        return cls(**_typed(cls, values, origin))


@dataclass
class TrainConfig:
    """Options of one training run (everything but the hyperparameters, which are in ``hyp``).

    ``device``: None (first GPU, else CPU), "cpu", "0", "cuda:1" ...; ``amp``: auto (bf16 on GPUs that have it,
    else fp16 with a GradScaler; off on CPU) | bf16 | fp16 | off; ``channels_last``: None = on for CUDA only; ``cuda_graph``: the network's
    forward and backward replayed as CUDA graphs, None = wherever they apply (CUDA, one process, no compile or
    gradient checkpointing; ``y9train.optimisation.graphed_network``); ``deterministic``: reproducible kernels (one seed, the same
    weights bit for bit on one machine) instead of cuDNN autotuning (``y9train.setup.determinism``); the start's bounds:
    ``cudnn_benchmark_limit`` (algorithms cuDNN times per convolution shape when autotuning) and
    ``cuda_graph_warmup`` (eager steps before the capture), both timed in ``startup.json`` (``y9train.timing.startup``),
    and ``val_autotune`` (False: validation takes cuDNN's heuristic algorithms instead of timing them for each of its
    batch shapes, which the first validation pays for);
    ``cache``: image cache None | "ram" | "disk"; ``new_head``: a checkpoint whose class count differs from the
    data gets a freshly initialised head for the data's classes (backbone weights kept); ``val``: validate after
    every epoch; ``save``: write checkpoints (``async_save``: in a background thread, from a snapshot taken at the
    epoch's end; ``y9train.checkpoints.writer``); ``log_interval``: batches between host reads of the running
    losses / grad norms (the hot loop never syncs otherwise); ``profile``: time the phases of every step;
    ``plots``: draw the run's pictures (results.png, the first batches and labels.jpg, the validation curves and
    confusion matrix; the CSV and JSON files are written either way).
    """

    data: str = ""
    model: str = "gelan-s"
    imgsz: int | None = None  # None: a checkpoint's trained size, else 640 (decided in setup, then kept)
    epochs: int = 100
    batch: int = 16
    device: str | None = None
    workers: int = 8
    project: str = "runs/train"
    name: str | None = None  # None: a new numbered folder project/exp, exp2 ... (y9core.files.run_dir)
    exist_ok: bool = False
    seed: int = 0  # every source of randomness; init_seed / order_seed / augment_seed: one (y9train.setup.seeds)
    init_seed: int | None = None
    order_seed: int | None = None
    augment_seed: int | None = None
    cache: str | None = None
    amp: str = "auto"
    channels_last: bool | None = None
    compile: bool = False
    cuda_graph: bool | None = None  # forward/backward as CUDA graphs; None: where they apply (y9train.optimisation.graphed_network)
    grad_checkpointing: bool = False
    deterministic: bool = False  # reproducible kernels instead of the fastest (y9train.setup.determinism)
    cudnn_benchmark_limit: int | None = None  # cuDNN algorithms timed per conv shape; None: torch's (10), 0: all
    cuda_graph_warmup: int = 3  # eager warm-up steps before a CUDA-graph capture (at least 1)
    val_autotune: bool = True  # cuDNN autotuning in validation too (False: its heuristics, no timing per val shape)
    sync_bn: bool = False  # torchrun runs: SyncBatchNorm across processes; ignored on one device
    new_head: bool = False
    val: bool = True
    val_batch: int | None = None
    conf: float = 0.001
    iou: float = 0.7
    max_det: int = 300
    save: bool = True
    save_dir: str | None = None  # set by the trainer: the run folder it writes (history in a checkpoint, not a target)
    async_save: bool = True  # checkpoints written in a background thread while the next epoch trains
    log_interval: int = 20
    profile: bool = False
    plots: bool = True
    verbose: bool = True
    hyp: Hyp = field(default_factory=Hyp)

    def __post_init__(self) -> None:
        if isinstance(self.hyp, dict):
            self.hyp = Hyp.from_dict(self.hyp)
        _check_choice("amp", self.amp, AMP_MODES)
        if self.cache not in (None, "ram", "disk"):
            raise ValueError(f"cache={self.cache!r}; expected none, ram or disk.")
        for name in ("imgsz", "epochs", "batch", "log_interval", "max_det", "cuda_graph_warmup"):
            if name == "imgsz" and self.imgsz is None:
                continue
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive integer.")
        if self.cudnn_benchmark_limit is not None and int(self.cudnn_benchmark_limit) < 0:
            raise ValueError(
                f"cudnn_benchmark_limit={self.cudnn_benchmark_limit}; expected none, 0 (every algorithm) or a "
                "positive number of algorithms."
            )
        if self.imgsz is not None and self.imgsz % 32:
            raise ValueError(f"imgsz={self.imgsz}; expected a multiple of 32 (the largest stride).")
        check_ranges(self, RUN_RANGES, "training option")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def amp_mode(self, device_type: str) -> str:
        """The AMP mode of the run on a ``device_type`` ("cuda", "cpu") device, decided here only: ``amp`` when
        set explicitly (bf16 | fp16 | off); else (auto) off on CPU, the recipe's ``hyp.amp_dtype`` on a GPU when
        it names one (the official recipe: fp16 with a GradScaler), else auto. ``y9train.setup.device_model.resolve_amp``
        turns the mode into a dtype and a GradScaler decision."""
        if self.amp != "auto":
            return self.amp
        if device_type != "cuda":
            return "off"
        return self.hyp.amp_dtype

    @classmethod
    def from_dict(cls, values: dict[str, Any], origin: str = "training options") -> TrainConfig:
        values = dict(values)
        hyp = values.pop("hyp", {})
        cfg = _typed(cls, values, origin)
        return cls(**cfg, hyp=hyp if isinstance(hyp, Hyp) else Hyp.from_dict(hyp, origin))


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r}; expected one of {', '.join(choices)}.")


def _kind(cls, name: str) -> tuple[str, bool]:
    """(base type name, optional) of a field, from its annotation string (``"bool | None"`` -> ("bool", True))."""
    annotation = str({f.name: f.type for f in fields(cls)}[name])
    return annotation.replace("| None", "").strip(), "None" in annotation


_NONE_WORDS = {"none", "null", "~", ""}
_WANT = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}


def _convert(cls, name: str, value: Any, origin: str) -> Any:
    """``value`` as the type of field ``name`` (strings from the command line are parsed as YAML scalars)."""
    base, optional = _kind(cls, name)
    if isinstance(value, str) and optional and value.strip().lower() in _NONE_WORDS:
        return None
    if isinstance(value, str) and base != "str":
        with contextlib.suppress(ConfigFileError):  # not YAML: stays a string, refused below
            value = parse_yaml_value(value, what=f"{origin}: {name}", error=ConfigFileError)
    if value is None and optional:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "bool" and isinstance(value, bool):
        return value
    if base == "int" and number and float(value).is_integer():
        return int(value)
    if base == "float" and number:
        return float(value)
    if base == "str" and isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{origin}: {name}={quoted(value)}; expected {_WANT.get(base, base)}.")


def _typed(cls, values: dict[str, Any], origin: str) -> dict[str, Any]:
    known = {f.name for f in fields(cls)} - {"hyp"}
    unknown = sorted(set(values) - known)
    if unknown:
        named = ", ".join(k + did_you_mean(k, known) for k in unknown)
        raise ValueError(
            f"{origin}: unknown key{'s' if len(unknown) > 1 else ''} {named}; expected names from {cls.__name__} "
            f"(see y9train/configs/hyp-default.yaml and `y9 train --help`)."
        )
    return {k: _convert(cls, k, v, origin) for k, v in values.items()}


def read_hyp_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a hyperparameter YAML file (one sentence on a missing or malformed file)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"hyperparameter file {path} does not exist; expected a YAML file of key: value "
            f"or a recipe name ({', '.join(RECIPES)})."
        )
    raw = load_yaml_file(path, what="hyperparameter file", error=ConfigFileError) or {}
    if not isinstance(raw, dict):
        raise ValueError(
            f"hyperparameter file {path} holds a {type(raw).__name__}; expected key: value pairs."
        )
    return raw


def resolve_hyp(name_or_path: str | Path | None) -> Path:
    """The hyperparameter file ``y9 train --hyp`` means (the one place that decides): a recipe name (``default``,
    ``official``: the bundled ``configs/hyp-NAME.yaml``), else a path to a YAML file; None is the default recipe."""
    if name_or_path is None:
        return DEFAULT_HYP_PATH
    text = str(name_or_path)
    if text in RECIPES:
        return CONFIGS_DIR / f"hyp-{text}.yaml"
    return Path(name_or_path)


def load_hyp(path: str | Path | None = None) -> Hyp:
    """Hyperparameters of ``path`` (a file, or a recipe name: see ``resolve_hyp``) on top of the defaults (keys
    missing from the file keep their default)."""
    path = resolve_hyp(path) if path is not None else None
    raw = read_hyp_yaml(path) if path is not None else {}
    return Hyp.from_dict(raw, f"hyperparameter file {path}" if path else "hyperparameters")


def recipe_name(hyp: Hyp) -> str:
    """The recipe ``hyp`` is (``default``, ``official``), or ``NAME + k changes`` naming the closest recipe and how
    many hyperparameters differ from it (recorded in a checkpoint's model facts)."""
    mine = hyp.to_dict()
    best = None
    for name in RECIPES:
        ref = load_hyp(name).to_dict()
        changed = sorted(k for k in mine if mine[k] != ref.get(k))
        if best is None or len(changed) < len(best[1]):
            best = (name, changed)
    name, changed = best  # type: ignore[misc]
    if not changed:
        return name
    shown = ", ".join(changed[:4]) + (", ..." if len(changed) > 4 else "")
    return f"{name} + {len(changed)} change{'s' if len(changed) > 1 else ''} ({shown})"


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["lr0=0.02", "mosaic=0"]`` -> ``{"lr0": "0.02", "mosaic": "0"}`` (values converted later, by field)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"override {quoted(item)} is not of the form key=value (e.g. lr0=0.02).")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def apply_overrides(config: TrainConfig, overrides: dict[str, Any], origin: str = "override") -> TrainConfig:
    """A copy of ``config`` with ``overrides`` (hyperparameter or run-option names) applied."""
    hyp_names = {f.name for f in fields(Hyp)}
    cfg_names = {f.name for f in fields(TrainConfig)} - {"hyp"}
    hyp_part = {k: v for k, v in overrides.items() if k in hyp_names}
    cfg_part = {k: v for k, v in overrides.items() if k in cfg_names}
    unknown = sorted(set(overrides) - hyp_names - cfg_names)
    if unknown:
        named = ", ".join(k + did_you_mean(k, hyp_names | cfg_names) for k in unknown)
        raise ValueError(
            f"{origin}: unknown key{'s' if len(unknown) > 1 else ''} {named}; expected hyperparameter names "
            "(see y9train/configs/hyp-default.yaml) or training options (see `y9 train --help`)."
        )
    hyp = dataclasses.replace(config.hyp, **_typed(Hyp, hyp_part, origin))
    return dataclasses.replace(config, **_typed(TrainConfig, cfg_part, origin), hyp=hyp)
