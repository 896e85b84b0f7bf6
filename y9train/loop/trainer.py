"""The training loop: one device (CPU or one GPU), no distributed code on this path.

``Trainer(config).fit() -> TrainResult``. Per batch: uint8 images copied to the device (non-blocking, pinned
memory) and scaled to [0, 1] there, forward under autocast (bf16, or fp16 with a GradScaler), the YOLOv9 loss,
backward; when ``y9train.optimisation.optim.AccumulationRule`` says so (every ``round(nbs / batch)`` batches, ramping up during
warmup with ``warmup_accumulate_ramp``; at an epoch's end a partial step, or with ``epoch_end: drop`` the pending
gradients are zeroed): unscale, clip the grad norm, optimiser step, ``zero_grad(set_to_none=True)``, EMA update.
``optimizer: auto`` is resolved once in ``setup`` (and stored in the run's config, so a resume keeps it).
Losses and grad norms stay on the device: the host reads them every ``log_interval`` batches (one copy) and at the
end of the epoch. After every epoch: the
EMA model is validated, ``last.pt`` (EMA weights + the full training state) and, on a better fitness, ``best.pt``
are written atomically, then ``results.csv`` is rewritten: from a snapshot, in a background thread while the next
epoch trains (``async_save``; ``y9train.checkpoints.writer``: the files of epoch N are complete when epoch N+1's
``on_epoch_end`` fires and when ``fit`` returns or raises); early stopping after ``patience`` epochs without a better
fitness. ``Trainer.from_checkpoint(last.pt)`` resumes exactly (see ``y9train.loop.state``).
A distributed wrapper plugs in through ``TrainHooks`` (``y9train.loop.hooks``) without touching this file.
On CUDA the network's forward and backward are replayed as CUDA graphs at the first full batch's shape
(``cuda_graph``; ``y9train.optimisation.graphed_network``: when it applies, and what it changes).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from y9core.deferred_signals import deferred_signals
from y9train.checkpoints.writer import CheckpointWriter
from y9train.loop.divergence import check_finite_weights
from y9train.loop.end import finish_run
from y9train.loop.hooks import EVENTS, StopTraining, TrainHooks
from y9train.loop.result import TrainResult, result_of
from y9train.loop.state import check_resume_epochs, read_train_state, restore_run, snapshot_run, write_run
from y9train.loop.trainer_setup import TrainerSetup
from y9train.optimisation.hyp import TrainConfig, apply_overrides
from y9train.reports.previews import TrainingPreviews
from y9train.reports.reporting import Reporter, StepLog
from y9train.setup.determinism import AlgorithmChoice, algorithm_choice
from y9train.setup.device_model import check_run_dir, open_run_dir
from y9train.timing.run_timing import RunTiming
from y9train.timing.startup import BackgroundImports, StartupClock

_NAN = float("nan")


class Trainer(TrainerSetup):
    """Train a YOLOv9 / GELAN model as ``config`` says (see ``y9train.optimisation.hyp.TrainConfig`` and ``Hyp``)."""

    def __init__(
        self,
        config: TrainConfig,
        *,
        hooks: TrainHooks | None = None,
        callbacks: dict[str, list[Callable[[Trainer], None]]] | None = None,
        reporter: Reporter | None = None,
        _resume: tuple[Path, dict, dict] | None = None,
    ):
        self.config = dataclasses.replace(
            config, hyp=dataclasses.replace(config.hyp)
        )  # the caller's stays as is
        self.hooks = hooks or TrainHooks()
        self.callbacks: dict[str, list[Callable]] = {e: [] for e in EVENTS}
        for event, fns in (callbacks or {}).items():
            for fn in fns:
                self.add_callback(event, fn)
        self.reporter = reporter or Reporter(config.verbose and self.hooks.is_main)
        self._resume = _resume
        self.save_dir: Path | None = None  # the run folder, once setup has taken it (None: not yet, or not saving)
        self.epoch = self.start_epoch = 0
        self.iteration = self.step = self.batch_index = self.last_batch_images = 0
        self.last_opt_step = -1  # the batch (``iteration``) of the last optimiser step, counted across epochs
        self.history: list[dict[str, Any]] = []
        self.best_fitness, self.best_epoch = _NAN, -1
        self.last_parts: dict[str, torch.Tensor] = {}
        self.last_grad_norm: torch.Tensor | None = None
        self.last_val = self.best_val = None  # ValResult of the latest epoch; (epoch, ValResult) of the best one
        self.previews = TrainingPreviews(None, [])  # setup makes the run's own (y9train.reports.previews)
        self.writer = CheckpointWriter(background=self.config.async_save)  # writer.wait(): this epoch's files
        self.hooks.attach(self)

    @classmethod
    def from_checkpoint(cls, path: str | Path, overrides: dict[str, Any] | None = None, **kwargs) -> Trainer:
        """Resume the run that wrote ``path`` (its last.pt); ``overrides`` may change e.g. device or workers."""
        path = Path(path)
        payload, state = read_train_state(path)
        config = TrainConfig.from_dict(state["config"], f"{path} training options")
        if overrides:
            config = apply_overrides(config, overrides, "resume override")
        check_resume_epochs(path, config.epochs, state)
        return cls(config, _resume=(path, payload, state), **kwargs)

    @property
    def resuming(self) -> bool:
        """Whether this trainer continues an earlier run (``from_checkpoint``)."""
        return self._resume is not None

    def add_callback(self, event: str, fn: Callable[[Trainer], None]) -> None:
        if event not in self.callbacks:
            raise ValueError(f"callback event {event!r} is unknown; expected one of {', '.join(EVENTS)}.")
        self.callbacks[event].append(fn)

    def _fire(self, event: str) -> None:
        for fn in self.callbacks[event]:
            fn(self)

    # ------------------------------------------------------------------------------------------ setup
    def setup(self) -> None:
        """Everything before the first batch (``fit`` calls it): device and precision, model and loss, data,
        optimisation, the run folder (or the resumed state), then the kernel choice; each part is timed into
        ``self.startup`` (``y9train.timing.startup``: ``startup.json`` in the run folder)."""
        cfg, hooks = self.config, self.hooks
        clock = self.startup = StartupClock()
        self.timing = RunTiming(clock)
        if hooks.is_main and cfg.save and not self._resume:
            check_run_dir(cfg)  # a named folder that holds a run: refused before the set-up, not after it
        imports = BackgroundImports()  # the optimiser's imports, beside device, model and data set-up
        try:
            self._setup_model_and_data(clock, imports)
        finally:
            imports.join()
        clock.lap("optimizer_imports")  # what the phases since "imports" left of them
        self._setup_optimisation()
        clock.lap("optimizer", sync=True)
        if hooks.is_main and (cfg.save or self._resume):
            resumed = self._resume[0] if self._resume else None
            self.save_dir, self.run_lock = open_run_dir(cfg, resumed, self.reporter.warn)
            self.config.save_dir = str(self.save_dir)
            self.steps_log = StepLog(self.save_dir / "steps.csv", fresh=self._resume is None)
        if self._resume:
            restore_run(self, *self._resume)
            self.last_opt_step, _ = self.accumulation.replay(self.nb, self.iteration)
        elif cfg.plots:  # a new run's folder gets pictures of its labels and first batches, drawn in the background
            self.previews = TrainingPreviews(self.save_dir, self.data_cfg.names)
            self.previews.labels(self.train_ds.labels)
        # last, after everything that can fail (nothing above runs a convolution or a matmul): fit puts it back
        self.algorithms_found = AlgorithmChoice.current()
        choice = algorithm_choice(cfg.deterministic, self.device, self.algorithms_found, cfg.cudnn_benchmark_limit)
        choice.apply()
        if cfg.deterministic or self.device.type == "cuda":
            self.reporter.info(choice.describe())
        self.reporter.info(self.describe_run())

    def will_step(self, batch: int) -> bool:
        """Whether the next batch to run, index ``batch`` of the current epoch, ends with an optimiser step
        (known before its forward: a distributed wrapper syncs gradients on exactly those batches)."""
        return self.accumulation.steps(self.iteration, self.last_opt_step, batch == self.nb - 1)

    # ------------------------------------------------------------------------------------------ loop
    def fit(self) -> TrainResult:
        """Train; returns the outcome. KeyboardInterrupt propagates (the last finished epoch is in last.pt: pending
        checkpoint writes are waited for; a failed one raises its own error, or is reported when another error ends
        the run)."""
        self._fire("on_pretrain_routine_start")
        try:
            self.setup()
        except BaseException:
            self.release_run_dir()
            raise
        cfg, stopped, timing = self.config, False, self.timing
        timing.setup_done()
        self._fire("on_train_start")
        try:
            for epoch in range(self.start_epoch, cfg.epochs):
                self.epoch = epoch
                timing.start_epoch(epoch)
                self._fire("on_epoch_start")
                record = self.train_epoch(epoch)
                self.epoch_batches.prefetch(epoch + 1)  # made while this epoch validates
                timing.lap("train")
                losses = {k: record[f"train/{k}"] for k in ("box", "cls", "dfl")}
                check_finite_weights(self.model, losses, epoch=epoch + 1, run=str(self.save_dir or cfg.name or "the run"))
                if self.averager.take(epoch, self.ema.module):
                    self.reporter.info(f"average_epochs: the weights are the mean of the last {self.averager.taken} "
                                       "epochs' EMA weights")  # fmt: skip
                if self.val_loader is not None:
                    record.update(self._validate())
                timing.lap("validate")
                if self.hooks.is_main:  # the start's record: startup.json after epochs 1 and 2, one log line
                    capture = self.graphed.capture_seconds if self.graphed is not None else None
                    self.startup.end_epoch(epoch - self.start_epoch, record, graph_capture=capture,
                                           folder=self.save_dir, report=self.reporter.info)  # fmt: skip
                stopped = self._end_epoch(epoch, record)
                self.hooks.barrier()
                self._fire("on_epoch_end")
                if self.hooks.is_main:
                    timing.lap("end")
                    timing.write(self.save_dir)  # every epoch: a killed run keeps its record
                if stopped:
                    self.reporter.info(
                        f"early stop: no better fitness for {cfg.hyp.patience} epochs (best: epoch "
                        f"{self.best_epoch + 1}, fitness {self.best_fitness:.4f})"
                    )
                    break
        except StopTraining:
            pass
        except BaseException:  # the training error wins over a failed background write (reported)
            finish_run(self, failing=True)
            raise
        finish_run(self, failing=False)
        self._fire("on_train_end")
        result = self.result(stopped)
        self.timing.fit_returned()
        if self.hooks.is_main:
            self.reporter.info(self.timing.summary())
            self.timing.write(self.save_dir)
        return result

    def release_run_dir(self) -> None:
        """Let another process write the run folder (the lock ``setup`` took); nothing when none was taken."""
        lock = getattr(self, "run_lock", None)
        if lock is not None:
            lock.release()

    def result(self, stopped: bool = False) -> TrainResult:
        self.writer.wait()  # the files it names are complete
        return result_of(self, stopped)

    def train_epoch(self, epoch: int) -> dict[str, Any]:
        """One pass over the training loader; returns the epoch's training record."""
        cfg, hyp, dev, timer = self.config, self.config.hyp, self.device, self.timer
        self.model.train()
        nb, interval = self.nb, cfg.log_interval
        sums = torch.zeros(4, device=dev)  # box, cls, dfl, grad norm (summed over optimiser steps)
        buf = torch.full((interval, 4), _NAN, device=dev)  # per batch: grad norm, box, cls, dfl
        host_rows: list[list] = []
        autocast = (  # a CUDA-graph capture needs autocast without its cast cache
            torch.autocast(dev.type, dtype=self.amp_dtype, cache_enabled=self.graphed is None)
            if self.amp_dtype
            else nullcontext()
        )
        self.reporter.epoch_start(epoch, cfg.epochs, nb)
        t_start, images, n_steps, lr = time.perf_counter(), 0, 0, _NAN
        first = epoch == self.start_epoch  # this run's first epoch: its first batch and step are timed
        if first:
            self.startup.skip()
        loader = self.epoch_batches.of(epoch)  # started while the epoch before validated, if there was one
        for i in range(nb):
            t0 = time.perf_counter()
            batch = next(loader)
            timer.start_step(time.perf_counter() - t0)
            if first and i == 0:
                self.startup.lap("first_batch")
            self.batch_index, ni, t = i, self.iteration, epoch + i / nb
            lr = self.lr_control.step(ni, t)
            if hyp.label_smoothing_decay:
                self.loss_fn.label_smoothing = hyp.label_smoothing * max(0.0, 1.0 - t / cfg.epochs)
            imgs = batch["img"].to(dev, non_blocking=True)
            if self.channels_last:
                imgs = imgs.contiguous(memory_format=torch.channels_last)
            imgs = imgs.float().div_(255)
            labels = batch["labels"]  # on the host: the loss checks and counts there, then copies without a wait
            self.last_batch_images = imgs.shape[0]
            images += self.last_batch_images
            with autocast:
                preds = self.train_model(imgs)
            timer.mark("forward")
            loss, parts = self.loss_fn(preds, labels)
            timer.mark("loss")
            (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
            timer.mark("backward")
            items = torch.stack((parts["box"], parts["cls"], parts["dfl"]))
            sums[:3] += items
            k = i % interval
            buf[k, 1:] = items
            self.accumulate = self.accumulation.accumulate(ni)
            if self.accumulation.steps(ni, self.last_opt_step, i == nb - 1):
                gn = self._optimizer_step()
                sums[3] += gn
                buf[k, 0] = gn
                n_steps += 1
                self.last_opt_step = ni
            elif i == nb - 1:  # epoch_end: drop: the pending gradients do not reach the next epoch
                self.optimizer.zero_grad(set_to_none=self.graphed is None)
            self.last_parts = parts
            if first and i == 0:
                self.startup.lap("first_step", sync=True)  # once per run: autotuning, graph capture
            host_rows.append([ni, epoch + 1, i, self.step, lr])
            self.iteration += 1
            timer.end_step()
            self.reporter.advance()
            if k == interval - 1 or i == nb - 1:
                self._flush(buf, host_rows, sums, i + 1, n_steps)
            self.previews.offer(ni, batch)
            self._fire("on_step_end")
        counts = torch.cat((sums, sums.new_tensor([images])))
        totals = self.hooks.all_reduce_mean(counts).cpu().tolist()  # one sync per epoch
        seconds = time.perf_counter() - t_start
        return {
            "epoch": epoch + 1,
            "train/box": totals[0] / nb,
            "train/cls": totals[1] / nb,
            "train/dfl": totals[2] / nb,
            "train/grad_norm": totals[3] / max(n_steps, 1),
            "lr": lr if nb else _NAN,
            "time_s": seconds,
            "img_s": totals[4] * self.hooks.world_size / seconds,  # images of all processes
        }

    def _optimizer_step(self) -> torch.Tensor:
        """Unscale, clip (or only measure) the grad norm, step, zero grads, EMA. Returns the pre-clip norm."""
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        clip = self.config.hyp.clip_grad
        if clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(self.params, clip, foreach=True)
        else:
            gn = torch.nn.utils.get_total_norm(
                [p.grad for p in self.params if p.grad is not None], foreach=True
            )
        self.last_grad_norm = gn
        self._fire("on_before_optimizer_step")
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=self.graphed is None)  # graphs: .grad is zeroed in place
        self.timer.mark("optimizer")
        self.ema.update(self.model)
        self.timer.mark("ema")
        self.step += 1
        return gn.detach().float()

    def _flush(self, buf: torch.Tensor, host_rows: list, sums: torch.Tensor, done: int, n_steps: int) -> None:
        """One device -> host copy of the buffered per-batch values; steps.csv rows and the running means."""
        self.writer.check()  # a failed background checkpoint write ends the run here
        vals = self.hooks.all_reduce_mean(torch.cat((buf[: len(host_rows)].flatten(), sums))).cpu().tolist()
        n = len(host_rows)
        rows = [host_rows[j] + vals[4 * j : 4 * j + 4] for j in range(n)]
        if self.save_dir is not None:
            self.steps_log.append(rows)
        s = vals[4 * n :]
        self.reporter.stats(
            done,
            {
                "box": s[0] / done,
                "cls": s[1] / done,
                "dfl": s[2] / done,
                "gn": s[3] / n_steps if n_steps else _NAN,
                "lr": rows[-1][4],
            },
        )
        host_rows.clear()
        buf.fill_(_NAN)

    # ------------------------------------------------------------------------------------------ epoch end
    def _validate(self) -> dict[str, float]:
        from y9train.reports.validate import run_validation

        res = run_validation(
            self.ema.module, self.val_loader, device=self.device, nc=self.data_cfg.nc, names=self.data_cfg.names,
            conf=self.config.conf, iou=self.config.iou, max_det=self.config.max_det, amp_dtype=self.amp_dtype,
            channels_last=self.channels_last, autotune=self.config.val_autotune,
        )  # fmt: skip
        self.ema.validated()
        self.last_val = res
        out = {f"metrics/{k}": v for k, v in res.metrics.items()}
        out["val_s"] = res.seconds
        return out

    def _end_epoch(self, epoch: int, record: dict[str, Any]) -> bool:
        """Best/early-stop bookkeeping, checkpoints, results.csv. Returns True to stop."""
        fit = record.get("metrics/fitness", _NAN)
        improved = self.best_epoch < 0 or (
            not math.isnan(fit) and (math.isnan(self.best_fitness) or fit > self.best_fitness)
        )
        if self.val_loader is None and self.config.val is False:
            improved = True  # no validation: the best weights are the latest
        with deferred_signals():  # a signal lands before or after both: history and last.pt never disagree
            if improved:
                self.best_fitness, self.best_epoch = fit, epoch
                if self.last_val is not None:
                    self.best_val = (epoch, self.last_val)
            self.history.append(record)
            if self.save_dir is not None:  # waits for the previous epoch's files, then writes in the background
                self.writer.submit(write_run, snapshot_run(self, epoch, record, improved))
        self.reporter.epoch_end(record)  # logged once its checkpoint is on its way (fit waits for it)
        patience = self.config.hyp.patience
        stop = bool(self.config.val and patience > 0 and epoch - self.best_epoch >= patience)
        return self.hooks.broadcast_stop(stop)
