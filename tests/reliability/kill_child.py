"""``python -m tests.reliability.kill_child KILL -- Y9_ARGS...``: run the real ``y9`` command line in this process and
SIGKILL this process at the point ``KILL`` names, at the precise moment, the way a crash or ``kill -9`` would.

KILL (``none`` runs to the end):
- ``replace:last:N`` / ``replace:best:N``: right after the N-th rename onto ``last.pt`` / ``best.pt`` (the file has
  just appeared; nothing after it ran);
- ``write:last:N`` / ``write:best:N``: in the middle of the N-th write of that checkpoint's temporary file (half of
  its bytes on disk, fsynced);
- ``event:NAME:N``: at the N-th trainer event NAME (on_epoch_start, on_step_end, on_before_optimizer_step,
  on_epoch_end, on_train_end);
- ``val:N``: as the N-th validation starts.
Only the moment of death is injected: the code that runs up to it is y9's own.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections import Counter
from pathlib import Path


def _die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def install(kill: str) -> None:
    if kill == "none":
        return
    kind, *rest = kill.split(":")
    target, count = (rest[0], int(rest[1])) if len(rest) == 2 else (None, int(rest[0]))
    seen: Counter = Counter()

    def hit(key: str) -> bool:
        seen[key] += 1
        return seen[key] == count

    if kind == "replace":
        real_replace = os.replace

        def replace(src, dst, *a, **k):
            real_replace(src, dst, *a, **k)
            if Path(dst).name == f"{target}.pt" and hit(target):
                _die()

        os.replace = replace
    elif kind == "write":
        import torch

        real_save = torch.save

        def save(obj, f, *a, **k):
            name = Path(os.readlink(f"/proc/self/fd/{f.fileno()}")).name if hasattr(f, "fileno") else ""
            if name.startswith(f".{target}.pt.") and hit(target):
                buf = io.BytesIO()
                real_save(obj, buf, *a, **k)
                data = buf.getvalue()
                f.write(data[: len(data) // 2])
                f.flush()
                os.fsync(f.fileno())
                _die()
            return real_save(obj, f, *a, **k)

        torch.save = save
    elif kind == "event":
        from y9train.loop.trainer import Trainer

        real_init = Trainer.__init__

        def die_at_event(trainer) -> None:
            if hit(target):
                _die()

        def init(self, *a, **k):  # every Trainer (a new run or a resumed one) gets the callback, last
            real_init(self, *a, **k)
            self.add_callback(target, die_at_event)

        Trainer.__init__ = init
    elif kind == "val":
        import y9train.reports.validate as validate

        real_run = validate.run_validation

        def run_validation(*a, **k):
            if hit("val"):
                _die()
            return real_run(*a, **k)

        validate.run_validation = run_validation
    else:
        raise SystemExit(f"unknown kill point {kill!r}; expected replace|write|event|val:...")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] != "--":
        raise SystemExit("usage: python -m tests.reliability.kill_child KILL -- Y9_ARGS...")
    install(argv[0])
    from y9cli.app import main as y9_main

    sys.argv = ["y9", *argv[2:]]
    y9_main()


if __name__ == "__main__":
    main(sys.argv[1:])
