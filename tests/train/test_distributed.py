"""Multi-process training pieces that need no process group: the per-rank split of each global batch, the torchrun
command of ``y9 train --devices``, the device rules under torchrun, and the single-device path staying free of any
distributed code (a real training run in a subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO, shared_path
from y9train.data import YoloBatchSampler
from y9train.run.distributed import DistributedBatchSampler, share_bounds
from y9train.run.launch import parse_devices, torchrun_command
from y9train.run.train import check_distributed_device


class _Shapes:
    """What YoloBatchSampler reads from a dataset (length, size, seed, epoch, mosaic flag)."""

    def __init__(self, n: int, seed: int = 3):
        self.n, self.imgsz, self.seed, self.epoch, self.mosaic = n, 160, seed, 0, True
        self.shapes = np.full((n, 2), 160)

    def __len__(self) -> int:
        return self.n


@pytest.mark.parametrize(("n", "batch", "world"), [(37, 8, 2), (37, 8, 4), (10, 4, 4), (9, 6, 3), (12, 4, 2)])
def test_rank_shares_rebuild_each_single_process_batch(n, batch, world):
    """Concatenating the ranks' batches in rank order gives the single-process batch (same indices, order, shape,
    epoch, mosaic flag) for every epoch; a last batch smaller than the world is skipped by every rank."""
    ds = _Shapes(n)
    single = YoloBatchSampler(ds, batch, shuffle=True, multi_scale=True)
    ranks = [DistributedBatchSampler(YoloBatchSampler(ds, batch, shuffle=True, multi_scale=True), r, world)
             for r in range(world)]  # fmt: skip
    for epoch in (0, 1, 5):
        ds.epoch = epoch
        want = [b for b in single if len(b) >= world]
        got = [list(r) for r in ranks]
        assert all(len(g) == len(want) == len(r) for g, r in zip(got, ranks, strict=True))
        for k, batch_keys in enumerate(want):
            shares = [g[k] for g in got]
            assert [key for s in shares for key in s] == batch_keys
            assert max(map(len, shares)) - min(map(len, shares)) <= 1 and min(map(len, shares)) >= 1
            assert len({key.shape for s in shares for key in s}) == 1  # one multi-scale size per global batch
    dropped = n % batch if 0 < n % batch < world else 0
    assert sum(len(b) for b in want) == n - dropped
    first = [k.index for b in ranks[0] for k in b]
    ds.epoch = 0
    assert first != [
        k.index for b in ranks[0] for k in b
    ]  # the shares follow the sampler's per-epoch shuffle


def test_share_bounds_cover_everything_once():
    for n in range(0, 12):
        for world in range(1, 6):
            spans = [share_bounds(n, r, world) for r in range(world)]
            assert spans[0][0] == 0 and spans[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
            sizes = [hi - lo for lo, hi in spans]
            assert max(sizes) - min(sizes) <= 1


def test_devices_parse_and_torchrun_command():
    assert parse_devices("0,1").gpus == (0, 1) and parse_devices(" 2 , 3 ").processes == 2
    assert parse_devices("cpu,cpu").cpu and parse_devices("cpu,cpu").processes == 2
    for bad, why in [("0,0", "twice"), ("0,,1", "empty"), ("0,cpu", "mixes"), ("gpu0", "mixes")]:
        with pytest.raises(ValueError, match=why):
            parse_devices(bad)
    env = {"PATH": "/bin", "NCCL_NVLS_ENABLE": "0"}
    argv, out = torchrun_command(parse_devices("1,0"), ["--data", "d.yaml", "lr0=0.02"], env)
    assert argv[1:] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
                        "y9train.run.train", "--data", "d.yaml", "lr0=0.02", "--device", "cuda"]  # fmt: skip
    assert out["CUDA_VISIBLE_DEVICES"] == "1,0" and out["NCCL_NVLS_ENABLE"] == "0" and out["PATH"] == "/bin"
    _, out = torchrun_command(parse_devices("0,2"), [], {"CUDA_VISIBLE_DEVICES": "4,5,6"})
    assert out["CUDA_VISIBLE_DEVICES"] == "4,6"  # indices into the GPUs already visible
    with pytest.raises(ValueError, match="makes 2 visible"):
        torchrun_command(parse_devices("0,3"), [], {"CUDA_VISIBLE_DEVICES": "4,5"})
    argv, out = torchrun_command(parse_devices("cpu,cpu"), ["--epochs", "1"], {})
    assert argv[-2:] == ["--device", "cpu"] and "CUDA_VISIBLE_DEVICES" not in out


def test_device_option_under_torchrun():
    for ok in (None, "cpu", "cuda", "auto", " CPU "):
        check_distributed_device(ok, 2)
    for bad in ("0", "1", "cuda:1", "0,1"):
        with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES"):
            check_distributed_device(bad, 2)


_PROBE = r"""
import json, os, sys, runpy
import torch.distributed as dist
args = sys.argv[1:]
for world_size, name in (("1", "torchrun-1"), (None, "plain")):  # torchrun's WORLD_SIZE=1, then no WORLD_SIZE
    if world_size is None:
        os.environ.pop("WORLD_SIZE", None)
    else:
        os.environ["WORLD_SIZE"] = world_size
    sys.argv = ["y9train.run.train", *args, "--name", name]
    try:
        runpy.run_module("y9train.run.train", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    mods = sorted(m for m in sys.modules if m.startswith("y9train.run.distributed") or m == "y9train.run.launch"
                  or m.startswith("torch.distributed.run") or m.startswith("torch.distributed.elastic"))
    print("PROBE " + json.dumps({"name": name, "code": code, "initialized": dist.is_initialized(), "modules": mods}))
"""


def test_single_device_run_never_touches_distributed_code(tmp_path):
    """``python -m y9train.run.train`` on one device trains without importing y9train.run.distributed or the launcher
    and without a process group: under torchrun's WORLD_SIZE=1, then without WORLD_SIZE. Both runs in one fresh
    process (one interpreter start instead of two): the modules are checked after each run, so an import by either
    shows, and each run reads WORLD_SIZE when it starts (``y9train.run.train.world_size``), not at import."""
    data = shared_path("datasets", "coco8", "data.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    args = ["--data", str(data), "--model", "gelan-t", "--imgsz", "64", "--epochs", "1", "--batch", "4",
            "--device", "cpu", "--workers", "0", "--no-val", "--project", str(tmp_path), "plots=false"]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600)  # fmt: skip
    lines = [json.loads(x[6:]) for x in proc.stdout.splitlines() if x.startswith("PROBE ")]
    assert len(lines) == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    for probe in lines:
        assert probe == {"name": probe["name"], "code": 0, "initialized": False, "modules": []}, proc.stderr[-2000:]
        assert (tmp_path / probe["name"] / "weights" / "last.pt").is_file()
    assert [p["name"] for p in lines] == ["torchrun-1", "plain"]
