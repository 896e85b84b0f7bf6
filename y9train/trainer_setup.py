"""The setup half of ``y9train.trainer.Trainer``: the steps of ``Trainer.setup`` before the run folder, each a method
that sets the trainer's own attributes (``Trainer`` inherits them; they read its ``config``, ``hooks``, ``reporter``
and ``_resume`` and nothing else).

- ``_setup_device``: device, seeds, data.yaml, the metrics backend, autocast dtype, memory format;
- ``_setup_model``: the model (resumed or fresh) on the device, the GradScaler, the loss;
- ``_setup_data``: datasets and loaders;
- ``_setup_optimisation``: ``optimizer: auto`` / ``ema_tau: 0`` decided once, EMA, optimiser, accumulation, the
  learning-rate schedule, CUDA graphs, the step timer.
"""

from __future__ import annotations

import torch

from y9train.ema import ModelEMA
from y9train.graphed_network import graphed_network
from y9train.optim import AccumulationRule, LRController, build_optimizer, resolve_auto, warmup_iters
from y9train.step_timer import StepTimer


class TrainerSetup:
    """Mixed into ``Trainer``: see the module docstring."""

    def _setup_device(self) -> bool:
        """The device, seeds, the data.yaml, the metrics backend, the autocast dtype and memory format; returns
        whether the run needs a GradScaler."""
        from y9core.val_result import require_metrics_backend
        from y9train.data import load_data_yaml
        from y9train.run_setup import resolve_amp, resolve_device, seed_everything

        cfg, hooks = self.config, self.hooks
        self.device = hooks.select_device(resolve_device(cfg.device))
        seed_everything(cfg.seed + hooks.rank)
        self.data_cfg = load_data_yaml(cfg.data, require=("train", "val") if cfg.val else ("train",))
        if cfg.val and hooks.is_main:
            require_metrics_backend()
        self.amp_dtype, use_scaler = resolve_amp(cfg.amp_mode(self.device.type), self.device)
        cuda = self.device.type == "cuda"
        self.channels_last = cuda if cfg.channels_last is None else cfg.channels_last
        return use_scaler

    def _setup_model(self, use_scaler: bool) -> None:
        """The model (from the resumed checkpoint, or built / loaded fresh) on the device, the GradScaler and the
        loss."""
        from y9train.checkpoint_facts import trained_facts
        from y9train.hyp import recipe_name
        from y9train.loss import DetectionLoss
        from y9train.run_setup import fp16_as_official, load_model_for_training

        cfg, hyp = self.config, self.config.hyp
        if self._resume:
            from y9train.checkpoint import model_from_payload

            path, payload, state = self._resume
            model = model_from_payload(payload, str(path))
        else:
            prior = hyp.bias_prior_imgsz or cfg.imgsz  # image size of the class-bias prior of a fresh head
            model = load_model_for_training(cfg.model, self.data_cfg, imgsz=prior, new_head=cfg.new_head,
                                            report=self.reporter.info)  # fmt: skip
            if hyp.init_fp16_round:
                model.half()  # the .float() below makes it float32 again: rounded to fp16 once
        model.set_grad_checkpointing(cfg.grad_checkpointing)
        fmt = torch.channels_last if self.channels_last else torch.preserve_format
        self.model = model.float().train().to(self.device, memory_format=fmt)
        self.facts = trained_facts(self.model, imgsz=cfg.imgsz, recipe=recipe_name(hyp))  # into every checkpoint
        self.scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        loss_fp16 = fp16_as_official(hyp.loss_fp16, self.device, self.amp_dtype)
        if hyp.loss_fp16:  # the run's log says which loss path it took
            self.reporter.info(
                "loss_fp16: the loss rounds to fp16 as train_dual.py's autocast loss"
                if loss_fp16
                else "loss_fp16: off here (it needs fp16 autocast); the loss stays float32"
            )
        self.loss_fn = DetectionLoss.from_model(
            self.model, label_smoothing=hyp.label_smoothing, box_gain=hyp.box, cls_gain=hyp.cls,
            dfl_gain=hyp.dfl, aux_weight=hyp.aux_weight, assigner_rule=hyp.assigner, fp16=loss_fp16,
        )  # fmt: skip

    def _setup_data(self) -> None:
        """The training and validation datasets and loaders (validation on the main process only)."""
        from y9core.data.dataset_warnings import dataset_warnings
        from y9train.data import AugmentConfig, YoloDataset, build_dataloader
        from y9train.run_setup import cpu_count

        cfg, hyp, hooks = self.config, self.config.hyp, self.hooks
        workers = max(0, min(cfg.workers, cpu_count()))
        common = {"imgsz": cfg.imgsz, "cache": cfg.cache, "seed": cfg.seed, "workers": max(workers, 1)}
        aug = AugmentConfig.from_dict(hyp.to_dict())
        self.train_ds = YoloDataset.from_yaml(self.data_cfg, "train", hyp=aug, **common)
        self.val_ds = (
            YoloDataset.from_yaml(self.data_cfg, "val", augment=False, **common) if cfg.val else None
        )
        for ds in (self.train_ds, self.val_ds):
            for p, why in ds.skipped if ds is not None else []:
                self.reporter.warn(f"image {p} is skipped ({why}); the run continues without it.")
        sets = {k: ds.label_set for k, ds in (("train", self.train_ds), ("val", self.val_ds)) if ds is not None}
        for text in dataset_warnings(self.data_cfg, sets):  # near-duplicate names, val = train, orphans, EXIF
            self.reporter.warn(text)
        self.train_loader = hooks.build_train_loader(
            self.train_ds, cfg.batch, workers=workers, multi_scale=hyp.multi_scale, seed=cfg.seed
        )
        self.val_loader = None
        if self.val_ds is not None and hooks.is_main:
            self.val_loader = build_dataloader(self.val_ds, cfg.val_batch or cfg.batch * 2, workers=workers)
        self.nb = len(self.train_loader)

    def _setup_optimisation(self) -> None:
        """``optimizer: auto`` and ``ema_tau: 0`` decided (once: the run's config keeps the concrete values), the
        EMA, the optimiser, gradient accumulation, the learning-rate schedule, the CUDA graphs and the step timer."""
        from y9train.run_setup import fp16_as_official

        cfg, hyp, hooks = self.config, self.config.hyp, self.hooks
        hyp, notes = resolve_auto(hyp, epochs=cfg.epochs, train_images=len(self.train_ds), batch=cfg.batch)
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
        self.optimizer = build_optimizer(self.model, hyp, batch=cfg.batch, device=self.device)
        self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.accumulation = AccumulationRule.from_hyp(hyp, cfg.batch, warmup_iters(hyp, self.nb))
        self.accumulate = self.accumulation.full
        self.lr_control = LRController(self.optimizer, hyp, cfg.epochs, self.nb)
        net = torch.compile(self.model) if cfg.compile else self.model
        self.graphed = graphed_network(
            self.model, self.params, self.device, requested=cfg.cuda_graph, compile=cfg.compile,
            grad_checkpointing=cfg.grad_checkpointing, distributed=hooks.world_size > 1, report=self.reporter.info,
            multi_scale=hyp.multi_scale,
        )  # fmt: skip
        self.train_model = self.graphed or hooks.wrap_model(net)
        self.timer = StepTimer(self.device, enabled=cfg.profile)
