"""The setup half of ``y9train.loop.trainer.Trainer``: the steps of ``Trainer.setup`` before the run folder, each a method
that sets the trainer's own attributes (``Trainer`` inherits them; they read its ``config``, ``hooks``, ``reporter``
and ``_resume`` and nothing else). Each part is timed into the run's ``StartupClock`` (``y9train.timing.startup``).

- ``_setup_model_and_data``: device, seeds, data.yaml, the metrics backend, autocast dtype and memory format, the
  model (resumed or fresh) on the device and its facts, the GradScaler, the loss, datasets and loaders;
- ``_setup_optimisation``: ``optimizer: auto`` / ``ema_tau: 0`` decided once, EMA, epoch average, optimiser,
  accumulation, the learning-rate schedule, CUDA graphs, the step timer.
"""

from __future__ import annotations

import torch

from y9core.wording import plural
from y9train.loop.epoch_batches import EpochBatches
from y9train.optimisation.ema import ModelEMA
from y9train.optimisation.graphed_network import graphed_network
from y9train.optimisation.optim import (
    AccumulationRule,
    LRController,
    build_optimizer,
    resolve_auto,
    warmup_iters,
)
from y9train.optimisation.weight_average import EpochAverage
from y9train.setup.seeds import RunSeeds
from y9train.timing.startup import BackgroundImports, StartupClock
from y9train.timing.step_timer import StepTimer


class TrainerSetup:
    """Mixed into ``Trainer``: see the module docstring."""

    def _setup_model_and_data(self, clock: StartupClock, imports: BackgroundImports) -> None:
        """Device, AMP, data.yaml, the model on the device (and the facts every checkpoint carries), the loss,
        datasets and loaders."""
        from y9core.evaluation.result import require_metrics_backend
        from y9train.checkpoints.facts import trained_facts, training_size
        from y9train.data import load_data_yaml
        from y9train.optimisation.hyp import recipe_name
        from y9train.setup.data import build_run_data
        from y9train.setup.device_model import (
            cpu_count,
            loss_for_run,
            model_for_run,
            resolve_amp,
            resolve_device,
            seed_everything,
        )

        clock.lap("imports")
        imports.start()
        cfg, hooks = self.config, self.hooks
        self.device = hooks.select_device(resolve_device(cfg.device))
        clock.set_device(self.device)
        seed_everything(RunSeeds.of(cfg).init + hooks.rank)
        clock.lap("device", sync=True)
        self.data_cfg = load_data_yaml(cfg.data, require=("train", "val") if cfg.val else ("train",))
        cfg.data = str(self.data_cfg.yaml_path)  # absolute in the run's config: a resume from elsewhere finds it
        clock.lap("data_yaml")
        if cfg.val and hooks.is_main:
            require_metrics_backend()  # imports the COCO evaluator
        clock.lap("imports")
        self.amp_dtype, use_scaler = resolve_amp(cfg.amp_mode(self.device.type), self.device)
        self.channels_last = self.device.type == "cuda" if cfg.channels_last is None else cfg.channels_last
        clock.lap("device")
        self.model = model_for_run(cfg, self.data_cfg, self._resume, self.device, self.channels_last,
                                   report=self.reporter.info)  # fmt: skip
        if cfg.imgsz is None:  # decided once: the run's config (checkpoints, resume) keeps the size
            cfg.imgsz, why = training_size(self.model)
            self.reporter.info(f"imgsz {cfg.imgsz}: {why} ({cfg.model}); imgsz=N trains at another size")
        self.facts = trained_facts(self.model, imgsz=cfg.imgsz, recipe=recipe_name(cfg.hyp))  # into every checkpoint
        clock.lap("model", sync=True)
        self.scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        self.loss_fn = loss_for_run(self.model, cfg.hyp, self.device, self.amp_dtype, report=self.reporter.info)
        clock.lap("loss")
        workers = max(0, min(cfg.workers, cpu_count()))
        data = build_run_data(cfg, self.data_cfg, hooks, workers=workers, report_skip=self.reporter.warn,
                              clock=clock)  # fmt: skip
        self.train_ds, self.val_ds = data.train_ds, data.val_ds
        self.train_loader, self.val_loader = data.train_loader, data.val_loader
        self.epoch_batches = EpochBatches(self.train_loader, cfg, self.reporter.info)
        self.nb = len(self.train_loader)

    def _setup_optimisation(self) -> None:
        """``optimizer: auto`` and ``ema_tau: 0`` decided (once: the run's config keeps the concrete values), the
        EMA, the epoch average, the optimiser, gradient accumulation, the learning-rate schedule, the CUDA graphs and
        the step timer."""
        from y9train.setup.device_model import fp16_as_official

        cfg, hooks = self.config, self.hooks
        hyp, notes = resolve_auto(cfg.hyp, epochs=cfg.epochs, train_images=len(self.train_ds), batch=cfg.batch)
        if notes:  # decided once: the run's config (checkpoints, resume) holds the concrete values
            self.config.hyp = hyp
            for note in notes:
                self.reporter.info(note)
        ema_fp16 = fp16_as_official(hyp.ema_fp16, self.device, self.amp_dtype)
        if hyp.ema_fp16:  # the run's log says which EMA path it took
            self.reporter.info(
                "ema_fp16: the EMA turns fp16 at its first validation"
                if ema_fp16
                else "ema_fp16: off here (it needs a CUDA device under fp16 autocast); the EMA stays float32"
            )
        self.ema = ModelEMA(self.model, hyp.ema_decay, hyp.ema_tau, fp16_from_validation=ema_fp16)
        self.averager = EpochAverage(hyp.average_epochs, cfg.epochs)
        self.optimizer = build_optimizer(self.model, hyp, batch=cfg.batch, device=self.device)
        self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.accumulation = AccumulationRule.from_hyp(hyp, cfg.batch, warmup_iters(hyp, self.nb))
        self.accumulate = self.accumulation.full
        self.lr_control = LRController(self.optimizer, hyp, cfg.epochs, self.nb)
        net = torch.compile(self.model) if cfg.compile else self.model
        self.graphed = graphed_network(
            self.model, self.params, self.device, requested=cfg.cuda_graph, compile=cfg.compile,
            grad_checkpointing=cfg.grad_checkpointing, distributed=hooks.world_size > 1, report=self.reporter.info,
            multi_scale=hyp.multi_scale, warmup_iters=cfg.cuda_graph_warmup,
        )  # fmt: skip
        self.train_model = self.graphed or hooks.wrap_model(net)
        if self.graphed is not None:  # one batch shape: the smaller last batch would run eagerly (and autotune)
            self.train_loader.batch_sampler.fill_last = True
        self.timer = StepTimer(self.device, enabled=cfg.profile)

    def describe_run(self) -> str:
        """One line of what this run is: model, data, size, batch, epochs, device, folder (after ``setup``)."""
        cfg, n, params = self.config, len(self.train_ds), sum(p.numel() for p in self.model.parameters())
        images = (f"{n} train and {len(self.val_ds)} val images" if self.val_ds is not None
                  else f"{plural(n, 'train image')} (no validation)")  # fmt: skip
        where = f"; writing {self.save_dir}" if self.save_dir is not None else "; nothing saved"
        start = f"from epoch {self.start_epoch + 1} of {cfg.epochs}" if self.start_epoch else plural(cfg.epochs, "epoch")
        return (f"{cfg.model} ({params:,} parameters): {images} at {cfg.imgsz} px, batch {cfg.batch}, {start}, on "
                f"{self.device}{where}")  # fmt: skip
