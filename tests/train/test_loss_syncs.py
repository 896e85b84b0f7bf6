"""How often the loss makes the host wait for the device. On CUDA the host waits at every scalar read (``.item()``,
``bool()``, ``int()``, ``.tolist()``, ``.cpu()``, ``.numpy()``), every data-dependent size (``nonzero``, boolean-mask
indexing, ``masked_select``, ``unique``, ``bincount``, ``repeat_interleave`` without ``output_size``) and every tensor
made from host data (``torch.tensor(list)``: a blocking copy). With the network replayed as CUDA graphs these were
the largest host cost of a step after the network (46 a batch in docs/benchmarks.md, session 4).

The same operators run on the CPU, so ``SyncCounter`` records them here with torch's own hooks: a
``TorchDispatchMode`` sees every aten operator of the forward and of the backward, a ``TorchFunctionMode`` the Python
calls that read a tensor. The labels the loader produced on the host are the one tensor the loss may read (it checks
them and counts the assigner's sizes there, before copying them to the device without waiting).
"""

from __future__ import annotations

import traceback

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from tests.train.test_loss_model import LABELS
from y9train.loss import DetectionLoss

#: aten operators (by name) whose CUDA implementation makes the host wait for the device
SYNC_OPS = {
    "aten._local_scalar_dense.default",  # .item(), bool(), int(), float(), .tolist() of one element
    "aten.is_nonzero.default",
    "aten.nonzero.default",
    "aten.argwhere.default",
    "aten.masked_select.default",
    "aten.bincount.default",
    "aten._unique.default",
    "aten._unique2.default",
    "aten.unique_dim.default",
    "aten.unique_consecutive.default",
    "aten.histc.default",
    "aten.lift_fresh.default",  # torch.tensor(data): made on the host, copied with a wait
}
#: indexing operators that wait when an index is a boolean mask
INDEX_OPS = {"aten.index.Tensor", "aten.index_put.default", "aten.index_put_.default", "aten._index_put_impl_.default"}
#: Python-level reads of a tensor (on CUDA each copies to the host and waits)
READS = {
    torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.cpu, torch.Tensor.__bool__,
    torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__,
}  # fmt: skip


def _is_mask(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8)


def _where() -> str:
    """The innermost y9 source line of the current stack."""
    for frame in reversed(traceback.extract_stack()):
        if "/y9train/" in frame.filename:
            return f"{frame.filename.split('/y9train/')[-1]}:{frame.lineno}"
    return "?"


class SyncCounter:
    """``with SyncCounter(host=labels) as c: ...``; ``c.events``: (what, y9 source line) of every operator that
    would make the host wait on CUDA. Reads (``numpy``, ``to``) of ``host`` itself are the loss's host side."""

    def __init__(self, host: torch.Tensor | None = None):
        self.host = host
        self.events: list[tuple[str, str]] = []
        self.reading = False
        counter = self

        class Dispatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = None
                if counter.reading:  # inside a Python-level read, already counted once
                    pass
                elif str(func) in SYNC_OPS:
                    name = str(func)
                elif str(func) in INDEX_OPS and any(_is_mask(i) for i in (args[1] or [])):
                    name = f"{func} with a boolean mask"
                elif str(func) == "aten.repeat_interleave.Tensor" and kwargs.get("output_size") is None:
                    name = "aten.repeat_interleave without output_size"
                if name is not None:
                    counter.events.append((name, _where()))
                return func(*args, **kwargs)

        class Reads(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                own = counter.host is not None and args and args[0] is counter.host
                name = None
                if func in READS and not (own and func is torch.Tensor.numpy):
                    name = f"Tensor.{func.__name__}"
                elif func is torch.Tensor.to and not own and "cpu" in map(str, [*args[1:], *kwargs.values()]):
                    name = "Tensor.to(cpu)"
                if name is None or counter.reading:
                    return func(*args, **kwargs)
                counter.events.append((name, _where()))
                counter.reading = True
                try:
                    return func(*args, **kwargs)
                finally:
                    counter.reading = False

        self._modes = (Reads(), Dispatch())

    def __enter__(self) -> SyncCounter:
        for m in self._modes:
            m.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for m in reversed(self._modes):
            m.__exit__(*exc)


def _step_events(branches: int, **loss_options) -> tuple[list, torch.Tensor]:
    """Sync events of one loss forward + backward on train-mode maps of ``branches`` branches (batch 2, 160 px,
    nc 3: the shapes of gelan-t / yolov9-t outputs) and the host labels of tests/train/test_loss_model.py."""
    g = torch.Generator().manual_seed(0)
    preds = [[torch.randn(2, 64 + 3, 160 // s, 160 // s, generator=g).requires_grad_() for s in (8, 16, 32)]
             for _ in range(branches)]  # fmt: skip
    loss_fn = DetectionLoss(3, **loss_options)
    loss_fn(preds, LABELS)  # warm: the anchor grid is made once per shape
    labels = LABELS.clone()  # the loader's host copy
    with SyncCounter(host=labels) as counter:
        total, _ = loss_fn(preds, labels)
        total.backward()
    return counter.events, total


@pytest.mark.parametrize("branches", [1, 2])
def test_the_loss_never_waits_for_the_device(branches):
    """Forward and backward of the default loss (gelan: one branch, yolov9: two) with the loader's host labels: not
    one operator that would make the host wait on CUDA (a yolov9-t batch had 9 before, 29 before session 5)."""
    events, total = _step_events(branches, label_smoothing=0.1)
    assert torch.isfinite(total) and total > 0
    assert events == []


def test_the_official_rule_reads_the_device_a_few_times_per_branch():
    """Rule "official" (``--hyp official``) reads the sizes of its conflicting anchors from the device."""
    events, _ = _step_events(2, assigner_overlap="ciou", assigner_rule="official")
    assert 2 <= len(events) <= 2 * 12, events
    assert all(where.startswith("loss/assigner.py") for _, where in events), events


def test_the_counter_sees_every_kind_of_wait():
    x = torch.tensor([0.0, 2.0, 3.0])  # made outside: not counted
    mask = x > 1
    host = torch.tensor([1.0, 2.0])
    waits = {
        "nonzero": lambda: x.nonzero(),
        "mask index": lambda: x[mask],
        "mask assignment": lambda: x.clone().__setitem__(mask, 1.0),
        "bincount": lambda: torch.bincount(x.long()),
        "unsized repeat_interleave": lambda: torch.repeat_interleave(x.long()),
        "unique": lambda: torch.unique(x),
        "bool": lambda: bool(x[0]),
        "int": lambda: int(x[1]),
        "item": lambda: x[0].item(),
        "tolist": lambda: x.tolist(),
        "numpy": lambda: x.numpy(),
        "cpu": lambda: x.cpu(),
        "to cpu": lambda: x.to("cpu"),
        "tensor from a list": lambda: torch.tensor([1.0, 2.0]),
    }
    no_waits = {
        "the host copy's own read": lambda: host.numpy(),
        "sized repeat_interleave": lambda: torch.repeat_interleave(x, x.long(), output_size=5),
        "a cast": lambda: x.to(torch.float64),
        "nonzero_static": lambda: torch.nonzero_static(mask, size=3),
        "index by integers": lambda: x[torch.arange(2)],
    }
    for what, fn in {**waits, **no_waits}.items():
        with SyncCounter(host=host) as counter:
            fn()
        assert bool(counter.events) == (what in waits), (what, counter.events)
