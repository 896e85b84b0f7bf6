"""The end of a training run, part by part: what ``Trainer.fit`` does after its last epoch (or when an error ends
it), each part timed into the run's ``timing.json`` (``y9train.timing.run_timing``, ``END_PHASES``), in this order:

1. ``loaders``: the loaders' worker processes are shut down now, in order (``shutdown_workers``), not left to the
   interpreter's exit, which waited about 5 s per worker on a GPU machine (issue 48; docs/benchmarks.md);
2. ``val_report``: the best epoch's validation files (metrics.json, per_class.csv, curves, confusion matrix); a
   resumed run whose epochs never beat the best one before the stop (whose validation is not in last.pt) reports its
   last epoch's, naming weights/last.pt; drawn while the last epoch's checkpoint files are still being written in the background (they need nothing of them);
3. ``checkpoint_writer``: those checkpoint files and results.csv are waited for (a failed write raises its error
   here, unless another error is already ending the run);
4. ``previews``, ``plots``: the pictures of the first batches (drawn during training) are waited for; results.png
   is drawn from results.csv;
5. ``run_lock``: the run folder's lock is released; ``timing.json`` is written.
The kernel choice that setup changed is put back whatever happens.
"""

from __future__ import annotations

from y9train.data.loader import shutdown_workers
from y9train.reports.plots import plot_run
from y9train.reports.val_files import write_training_val_report


def finish_run(trainer, *, failing: bool) -> None:
    """Close everything ``trainer`` opened for its run (see the module docstring); ``failing``: an error is already
    ending the run, so a failed checkpoint write is reported as one line instead of raised."""
    cfg, timing = trainer.config, trainer.timing
    try:
        trainer.algorithms_found.apply()
        for loader in (trainer.train_loader, trainer.val_loader):
            shutdown_workers(loader)
        timing.lap("loaders")
        best = trainer.best_val  # after a resume whose epochs never beat the best: the last epoch's validation
        if best is None and trainer.last_val is not None and trainer.history:
            best = (len(trainer.history) - 1, trainer.last_val)
        write_training_val_report(trainer.save_dir, best, trainer.best_epoch, {"data": cfg.data,
                                  "model": cfg.model, "imgsz": cfg.imgsz}, trainer.reporter,
                                  pictures=cfg.plots)  # fmt: skip
        timing.lap("val_report")
    finally:
        try:
            if failing:
                trainer.writer.close_reporting(trainer.reporter.warn)
            else:
                trainer.writer.close()
        finally:
            timing.lap("checkpoint_writer")
            trainer.previews.close(trainer.reporter.warn)
            trainer.reporter.close()
            timing.lap("previews")
            if cfg.plots:
                plot_run(trainer.save_dir, bool(trainer.history), trainer.reporter)
            timing.lap("plots")
            trainer.release_run_dir()
            timing.lap("run_lock")
            if trainer.hooks.is_main:  # fit writes it again once it returns; this one stays if an error ends it
                timing.write(trainer.save_dir)
