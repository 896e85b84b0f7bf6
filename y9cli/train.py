"""``y9 train`` and ``y9 val``: thin wrappers over ``y9train.run.train.train`` and, for ``y9 val``, ``val_model`` here:
``y9train.reports.validate.val_checkpoint`` for ``.pt``, ``y9deploy.validate_deployed.val_deployed`` for deployed files."""

from __future__ import annotations

import math
import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import command_line, on_interrupt
from y9cli.outputs import ExistOkOption, NameOption, ProjectOption, run_folder, writing
from y9core.wording import plural


# The library's choices (y9train.run.args.AMP_CHOICES, CACHE_CHOICES), spelled out: importing y9train here would
# load the trainer package for `y9 val` of a deployed file too; tests/cli/test_train_options.py holds them equal.
class Amp(str, Enum):
    auto = "auto"
    bf16 = "bf16"
    fp16 = "fp16"
    off = "off"


class Cache(str, Enum):
    none = "none"
    ram = "ram"
    disk = "disk"


def _pct(v: float) -> str:
    return "   -" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:5.1f}"


def option_values(ctx: typer.Context) -> dict:
    """The parsed values of this ``y9 train`` call by parameter name (enums as their text), less ``--devices``:
    the arguments of ``y9train.run.args.train_kwargs``."""
    return {k: v.value if isinstance(v, Enum) else v for k, v in ctx.params.items() if k != "devices"}


def forwarded_args(ctx: typer.Context, drop: tuple[str, ...] = ("devices", "device")) -> list[str]:
    """The command line of this ``y9 train`` call rebuilt from its parsed values, less the ``drop`` options: what
    ``--devices`` hands each torchrun process (``python -m y9train.run.train``)."""
    options: list[str] = []
    positional: list[str] = []
    for p in ctx.command.params:
        if p.name in drop or p.name not in ctx.params:
            continue
        value = ctx.params[p.name]
        if p.param_type_name == "argument":
            positional += [str(v) for v in value or []]
        elif getattr(p, "is_flag", False):
            options += [p.opts[0]] if value else []
        elif value is not None:
            options += [p.opts[0], str(value.value if isinstance(value, Enum) else value)]
    return options + positional


def train_command(
    ctx: typer.Context,
    overrides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Hyperparameter or option overrides, key=value (e.g. lr0=0.02 mosaic=0 patience=30); after "
            "--resume, an optional run folder or last.pt.",
            metavar="KEY=VALUE",
        ),
    ] = None,
    data: Annotated[Path | None, typer.Option("--data", help="data.yaml (path, train, val, names).")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="A model name (gelan-t ... yolov9-e) or a checkpoint to start from (default gelan-s)."
        ),
    ] = None,
    imgsz: Annotated[
        int | None,
        typer.Option(
            "--imgsz", help="Training size, pixels, a multiple of 32 (default: a checkpoint's trained size, else 640)."
        ),
    ] = None,
    epochs: Annotated[int | None, typer.Option("--epochs", help="Epochs to train (default 100).")] = None,
    batch: Annotated[int | None, typer.Option("--batch", help="Images per batch (default 16).")] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="cpu or a GPU index (default: GPU 0 if any).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="DataLoader worker processes (default 8, at most the CPUs).")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Folder of runs (default runs/train).")
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Run folder name under --project (default: a new numbered folder exp, exp2 ...); a named folder "
            "that holds a run is refused unless --exist-ok.",
        ),
    ] = None,
    exist_ok: Annotated[
        bool,
        typer.Option("--exist-ok", help="Train into a named run folder that holds a run (its files are replaced)."),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Resume a run: `--resume` alone takes the newest under runs/train; `--resume PATH` a run folder or "
            "its last.pt. Its data, model, image size, hyp file and folder stay (giving them is refused); other "
            "options and key=value overrides apply (e.g. epochs=10).",
        ),
    ] = False,
    hyp: Annotated[
        str | None,
        typer.Option(
            "--hyp",
            help="Recipe name (default, official) or a hyperparameter YAML file (default: the default recipe, "
            "y9train/configs/hyp-default.yaml).",
        ),
    ] = None,
    amp: Annotated[
        Amp | None, typer.Option("--amp", help="Mixed precision (auto: bf16/fp16 on GPU, off on CPU).")
    ] = None,
    cache: Annotated[Cache | None, typer.Option("--cache", help="Image cache (default none).")] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed of the run (weights, augmentation, sampling; default 0).")
    ] = None,
    grad_checkpointing: Annotated[
        bool, typer.Option("--grad-checkpointing", help="Re-compute activations in backward (less memory).")
    ] = False,
    compile_model: Annotated[bool, typer.Option("--compile", help="torch.compile the model.")] = False,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--deterministic",
            help="Reproducible kernels: one seed trains the same weights bit for bit on the same machine (no cuDNN "
            "autotuning: slower on GPUs).",
        ),
    ] = False,
    new_head: Annotated[
        bool,
        typer.Option("--new-head", help="New class head when the checkpoint's classes differ from the data."),
    ] = False,
    no_val: Annotated[bool, typer.Option("--no-val", help="Skip validation after each epoch.")] = False,
    devices: Annotated[
        str | None,
        typer.Option(
            "--devices",
            help="Train on several GPUs, e.g. 0,1: one process per GPU through torchrun (DDP); --batch is then the "
            "global batch. cpu,cpu starts CPU processes (gloo).",
        ),
    ] = None,
    sync_bn: Annotated[
        bool,
        typer.Option("--sync-bn", help="SyncBatchNorm across processes (--devices / torchrun runs)."),
    ] = False,
) -> None:
    """Train a YOLOv9 / GELAN model on one device (CPU or one GPU), or on several GPUs with --devices."""
    if devices is not None:
        from y9train.run.launch import launch, parse_devices

        chosen = parse_devices(devices)
        if os.environ.get("WORLD_SIZE", "1") not in ("", "1"):
            raise ValueError(
                "--devices starts torchrun itself; under torchrun, choose GPUs with CUDA_VISIBLE_DEVICES."
            )
        if device is not None:
            raise ValueError(
                f"--device {device} and --devices {devices} were both given; expected one of them."
            )
        if chosen.processes > 1:
            raise typer.Exit(launch(chosen, forwarded_args(ctx)))
        device = "cpu" if chosen.cpu else str(chosen.gpus[0])
    from y9train.run.args import summary, train_kwargs
    from y9train.run.train import train

    progress = _Progress()
    on_interrupt(progress.kept, progress.go_on)
    callbacks = {"on_pretrain_routine_start": [progress.started]}  # the run folder as soon as it is taken
    values = {**option_values(ctx), "device": device}
    if isinstance(values.get("model"), str) and values["model"].lower().endswith((".pt", ".pth")):
        from y9.model_files import model_file

        values["model"] = str(model_file(values["model"]))  # official weights by name: downloaded once
    result = train(**train_kwargs(**values), callbacks=callbacks)
    if os.environ.get("RANK", "0") == "0":  # torchrun: rank 0 reports
        if result.timing is not None:  # timing.json gets the time after fit too, up to the interpreter's exit
            result.timing.record_exit(result.save_dir)
        typer.echo(summary(result))


class _Progress:
    """Where a training run stands, for the line an interruption prints: its folder and the epochs whose
    last.pt is written (a signal ends ``fit`` after it waited for the checkpoint write in flight)."""

    def __init__(self) -> None:
        self.trainer = None

    def started(self, trainer) -> None:
        self.trainer = trainer

    @property
    def resumed(self) -> bool:
        return self.trainer is not None and self.trainer.resuming

    @property
    def run(self) -> Path | None:
        return self.trainer.save_dir if self.trainer is not None else None

    @property
    def saved(self) -> int:
        """Epochs in last.pt: each history entry is recorded together with its checkpoint write, which ``fit``
        waits for when a signal ends it."""
        return len(self.trainer.history) if self.trainer is not None else 0

    @property
    def epochs(self) -> int:
        return self.trainer.config.epochs if self.trainer is not None else 0

    def kept(self) -> str:
        if self.run is None:
            return "nothing was written (the run had not started)"
        if self.saved == 0:
            return f"no epoch had finished, so {self.run} holds nothing to resume"
        return (
            f"kept {self.run / 'weights' / 'last.pt'} (epoch {self.saved} of {self.epochs}), best.pt and results.csv "
            f"in {self.run}"
        )

    def go_on(self) -> str:
        if self.resumed:  # the same resume again (with its own overrides, e.g. epochs=)
            return f"to resume: {command_line()}"
        if self.run is not None and self.saved > 0:
            return f"to resume: {command_line(['train', '--resume', str(self.run)])}"
        again = command_line()
        named = "--name" in again.split() and "--exist-ok" not in again.split()
        return f"to start again: {again}{' --exist-ok' if named else ''}"


def val_command(
    data: Annotated[Path, typer.Option("--data", help="data.yaml.")],
    model: Annotated[
        Path,
        typer.Option(
            "--model",
            help="A y9 or official YOLOv9 checkpoint (.pt), or the deployed file itself: an ONNX model (.onnx) "
            "or a TensorRT engine (.engine), run through Detector.",
        ),
    ],
    imgsz: Annotated[
        int | None,
        typer.Option(
            "--imgsz", help="Validation size, pixels (.pt: default the trained size; .onnx/.engine fix their own)."
        ),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Images per batch.")] = 32,
    conf: Annotated[float, typer.Option("--conf", help="Score threshold.")] = 0.001,
    iou: Annotated[float, typer.Option("--iou", help="NMS IoU threshold.")] = 0.7,
    device: Annotated[str | None, typer.Option("--device", help="cpu or a GPU index.")] = None,
    workers: Annotated[int, typer.Option("--workers", min=0, help="DataLoader worker processes.")] = 8,
    split: Annotated[str, typer.Option("--split", help="data.yaml split.")] = "val",
    project: ProjectOption = None,
    name: NameOption = None,
    exist_ok: ExistOkOption = False,
    save_json: Annotated[
        bool, typer.Option("--save-json", help="Also write predictions.json: every detection, COCO results format.")
    ] = False,
    plots: Annotated[
        bool, typer.Option("--plots/--no-plots", help="Draw the report's pictures (curves, confusion matrices).")
    ] = True,
) -> None:
    """COCO metrics (mAP50-95, mAP50, AP by size, P/R) of a checkpoint, ONNX model or engine on a data.yaml split;
    metrics.json, per_class.csv, curves, confusion matrix and their pictures go to a new run folder (runs/val...)."""
    from y9.model_files import model_file
    from y9.val import val_model
    from y9core.evaluation.report import write_val_report

    model = model_file(model)  # official weights by name: downloaded once; a missing file: the API's sentence

    run = run_folder("val", project=project, name=name, exist_ok=exist_ok, inputs=[data, model])
    with writing(run, reuse="files of the same name are replaced"):
        res = val_model(
            data, model, imgsz=imgsz, batch=batch, conf=conf, iou=iou, device=device, workers=workers, split=split
        )
        size = list(res.imgsz) if res.imgsz else imgsz  # the size it ran at, not only the option
        about = {"model": str(model), "data": str(data), "split": split, "imgsz": size, "conf": conf, "iou": iou}
        report = write_val_report(res, run.path, save_json=save_json, about=about, pictures=plots)
    m = res.metrics
    typer.echo(
        f"{plural(res.images, 'image')}{res.at()}, {plural(res.targets, 'box')}, {plural(res.detections, 'detection')}, "
        f"{res.seconds:.1f} s"
    )
    typer.echo("class                n_gt     P     R  mAP50  mAP50-95")
    typer.echo(
        f"{'all':<18} {res.targets:>6} {_pct(m['precision'])} {_pct(m['recall'])} {_pct(m['map50'])}    "
        f"{_pct(m['map50_95'])}"
    )
    for c in res.per_class:
        if c["n_gt"]:
            typer.echo(
                f"{c['name'][:18]:<18} {c['n_gt']:>6} {_pct(c['precision'])} {_pct(c['recall'])} "
                f"{_pct(c['map50'])}    {_pct(c['map50_95'])}"
            )
    typer.echo(
        f"AP small {_pct(m['map_small'])}  medium {_pct(m['map_medium'])}  large {_pct(m['map_large'])}  "
        f"fitness {m['fitness']:.4f}"
    )
    typer.echo(f"saved to {run.path}: {', '.join(p.name for p in report.files)}")
    for note in report.notes:
        typer.echo(f"note: {note}")



def register(app: typer.Typer) -> None:
    app.command("train")(train_command)
    app.command("val")(val_command)
