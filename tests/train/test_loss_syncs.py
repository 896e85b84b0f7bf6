"""How often the loss makes the host wait for the device. On CUDA every scalar read (``.item()``, ``int()``,
``bool()``, ``.tolist()``: ``aten::_local_scalar_dense``) and every data-dependent size (``aten::nonzero``, which
boolean-mask indexing calls) is a host sync; with the network replayed as CUDA graphs they are the training step's
largest host cost after the network (docs/benchmarks.md, session 5). The same operators run on the CPU, so their
count is checked here with torch's profiler, per loss branch.
"""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tests.train.test_loss_model import LABELS
from y9train.loss import DetectionLoss
from y9train.models import build_model

SYNCING = ("aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select")
#: per branch: the total pair count (one read), the kept pairs, the conflict winners, the decoded positives, and
#: the label check of the call (once for both branches)
MAX_PER_BRANCH = 5


@pytest.mark.parametrize("name", ["gelan-t", "yolov9-t"])
def test_the_loss_reads_the_device_a_handful_of_times_per_branch(name):
    torch.manual_seed(0)
    model = build_model(name, nc=3).train()
    with torch.no_grad():
        out = model(torch.rand(2, 3, 160, 160))
    loss_fn = DetectionLoss.from_model(model)
    loss_fn(out, LABELS)  # warm (lazy grids)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        total, _ = loss_fn(out, LABELS)
    syncing = [e.name for e in prof.events() if e.name in SYNCING]
    branches = 2 if model.is_dual else 1
    assert torch.isfinite(total)
    assert 1 <= len(syncing) <= MAX_PER_BRANCH * branches, syncing
