"""Multi-process training with torchrun: ``DistributedHooks`` plug DistributedDataParallel into the ``Trainer``.

``torchrun --nproc-per-node N -m y9train.run.train ...`` (or ``y9 train --devices 0,1 ...``, which launches it) starts N
processes; ``y9train.run.train`` sees ``WORLD_SIZE > 1`` and trains through these hooks. The single-device path never
imports this module. What a run does:

- process group from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``): NCCL on CUDA, process
  ``LOCAL_RANK`` on ``cuda:LOCAL_RANK`` of the visible GPUs; gloo with ``--device cpu``;
- ``--batch`` is the **global** batch (a multiple of the number of processes). Each global batch of the
  single-process sampler (same order, shapes and per-sample augmentation, which depends on ``(seed, epoch, index)``
  only) is cut into contiguous equal shares, one per rank (``DistributedBatchSampler``): the union of the ranks'
  batches is the single-process batch. A last global batch smaller than the number of processes is dropped;
- the loss normaliser ``T`` (the sum of target scores) is the whole global batch's (``GlobalNormaliser``, one
  scalar all-reduce per branch) and gradients are **summed** over processes (a DDP communication hook) instead of
  averaged: the ranks' losses add up to the single-process loss of the global batch, whatever the split of the
  targets between the shares (the official trainers normalise per process and multiply the loss by the world size,
  which weighs the images of a share with few targets up: on a 2 x 2-image coco8 batch the class term came out 11.87
  that way against 6.79 for one process, and 6.70 with the global normaliser);
- gradient accumulation to the nominal batch ``nbs`` counts global batches (``accumulate = round(nbs / batch)``);
  the forward of every batch that does not end an accumulation runs under ``DistributedDataParallel.no_sync()``;
- BatchNorm statistics are per process unless ``sync_bn`` (``torch.nn.SyncBatchNorm`` on CUDA, ``CpuSyncBatchNorm``
  with gloo);
- rank 0 alone validates, writes checkpoints, results.csv / steps.csv and the progress output; the other ranks wait
  for it in the early-stop broadcast and the barrier after every epoch. The logged losses (steps.csv, results.csv) are
  means over the ranks, i.e. the global batch's, and img/s counts the images of all ranks;
- resume: every process reads the same ``last.pt``;
- rank 0 builds the dataset caches first; the others start once it is done (so that they read them).

Differences from a single process at the same global batch: BatchNorm statistics over a share of the batch (unless
``sync_bn``: with it, the two runs are the same computation up to floating-point summation order, see
tests/train/test_distributed_torchrun.py), and the last global batch of an epoch when it is too small or does not split
evenly (its shares are weighted by their sizes).
"""

from __future__ import annotations

import datetime
import os
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from y9train.loop.hooks import TrainHooks

#: seconds a collective may wait (rank 0 validating a large set, building caches) before the run fails
DEFAULT_TIMEOUT_S = 3600.0


def _env_int(name: str, default: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ValueError(
                f"environment variable {name} is not set; expected a torchrun launch (it sets it)."
            )
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer.") from None


def share_bounds(n: int, rank: int, world_size: int) -> tuple[int, int]:
    """``[lo, hi)`` of rank ``rank``'s contiguous share of ``n`` items cut into ``world_size`` near-equal parts."""
    base, extra = divmod(n, world_size)
    lo = rank * base + min(rank, extra)
    return lo, lo + base + (1 if rank < extra else 0)


class DistributedBatchSampler:
    """Rank ``rank``'s share of every global batch of ``batches`` (a ``YoloBatchSampler`` of the global batch size).

    Yields lists of ``SampleKey``: the contiguous share ``share_bounds(len(batch), rank, world_size)`` of each global
    batch, with the global batch's shape (multi-scale) and epoch. A global batch with fewer images than processes
    (only the last one can be) is skipped by every rank, so all ranks make the same number of steps.
    """

    def __init__(self, batches, rank: int, world_size: int):
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of world size {world_size}; expected 0 <= rank < world size.")
        self.batches = batches
        self.rank = rank
        self.world_size = world_size

    def __len__(self) -> int:
        n, b = len(self.batches.dataset), self.batches.batch_size
        full, tail = divmod(n, b)
        return full + (1 if tail >= self.world_size and not self.batches.drop_last else 0)

    def __iter__(self):
        for keys in self.batches:
            if len(keys) < self.world_size:
                continue
            lo, hi = share_bounds(len(keys), self.rank, self.world_size)
            yield keys[lo:hi]


def _allreduce_sum_hook(state, bucket):
    """DDP communication hook: gradients summed over processes (DDP's default divides the sum by the world size)."""
    work = dist.all_reduce(bucket.buffer(), group=state, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


class GlobalNormaliser:
    """Loss normaliser of a DDP run (``DetectionLoss.normaliser``): ``T = max(sum over processes of their target-score
    sums, 1) / world_size``. Rank r's terms are then ``N * U_r / T_global``: their mean over ranks is what one process
    logs for the whole global batch, and the summed gradients of the ranks' losses (share size times terms) are the
    single-process gradient, whatever the split of the targets between the shares. One scalar all-reduce per branch."""

    def __init__(self, world_size: int):
        self.world_size = int(world_size)

    def __call__(self, score_sum: torch.Tensor) -> torch.Tensor:
        total = score_sum.detach().float().clone()
        dist.all_reduce(total)
        return total.clamp(min=1.0) / self.world_size


class _AllReduceSum(torch.autograd.Function):
    """Sum over processes with a gradient: the backward sums the gradients of every process's output."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.clone(memory_format=torch.contiguous_format)
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone(memory_format=torch.contiguous_format)
        dist.all_reduce(grad)
        return grad


class CpuSyncBatchNorm(nn.BatchNorm2d):
    """BatchNorm2d whose training statistics cover the batches of all processes, for CPU (gloo) runs: torch's
    ``SyncBatchNorm`` accepts CUDA tensors only. Per channel, the sums of x and x^2 and the count are all-reduced (with
    a gradient); mean = sum / n, biased variance = sum(x^2) / n - mean^2 normalises, the unbiased one (times
    n / (n - 1)) enters the running estimate. Outside training or of a process group it is plain BatchNorm2d."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and dist.is_initialized() and dist.get_world_size() > 1):
            return super().forward(x)
        c = x.shape[1]
        xf = x.float()
        local = torch.cat((xf.sum((0, 2, 3)), (xf * xf).sum((0, 2, 3)), xf.new_tensor([x.numel() // c])))
        stats = _AllReduceSum.apply(local)
        n = stats[-1]
        mean = stats[:c] / n
        var = (stats[c : 2 * c] / n - mean * mean).clamp(min=0.0)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                m = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
                self.running_mean.lerp_(mean.detach().to(self.running_mean.dtype), m)
                unbiased = var.detach() * (n.detach() / (n.detach() - 1).clamp(min=1.0))
                self.running_var.lerp_(unbiased.to(self.running_var.dtype), m)
        scale = torch.rsqrt(var + self.eps)
        if self.affine:
            shift = self.bias - mean * scale * self.weight
            scale = scale * self.weight
        else:
            shift = -mean * scale
        return (xf * scale[None, :, None, None] + shift[None, :, None, None]).to(x.dtype)


def convert_cpu_sync_batchnorm(module: nn.Module) -> nn.Module:
    """``module`` with every BatchNorm2d replaced by a ``CpuSyncBatchNorm`` sharing its parameters and buffers (in
    place below the top level, as ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``)."""
    out = module
    if type(module) is nn.BatchNorm2d:
        out = CpuSyncBatchNorm(
            module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats
        )
        if module.affine:
            out.weight, out.bias = module.weight, module.bias
        if module.track_running_stats:
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
        out.train(module.training)
    for name, child in module.named_children():
        out.add_module(name, convert_cpu_sync_batchnorm(child))
    return out


class _SyncControlled(nn.Module):
    """The DDP module, with ``sync`` deciding whether the next forward/backward all-reduces the gradients
    (``sync = False`` runs the forward under ``no_sync()``: the gradients accumulate locally)."""

    def __init__(self, ddp: DistributedDataParallel):
        super().__init__()
        self.ddp = ddp
        self.sync = True

    def forward(self, *args, **kwargs):
        with nullcontext() if self.sync else self.ddp.no_sync():
            return self.ddp(*args, **kwargs)


class DistributedHooks(TrainHooks):
    """Trainer hooks of one torchrun process (see the module docstring).

    Args:
        rank, world_size: this process among all; local_rank, local_world_size: on this node.
        timeout_s: how long a collective may wait.
    ``Trainer(config, hooks=DistributedHooks.from_env())``; ``close()`` when the run is over.
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        local_rank: int = 0,
        local_world_size: int | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"RANK={rank}, WORLD_SIZE={world_size}; expected 0 <= RANK < WORLD_SIZE.")
        self.rank, self.world_size = int(rank), int(world_size)
        self.local_rank = int(local_rank)
        self.local_world_size = int(local_world_size or world_size)
        self.timeout_s = float(timeout_s)
        self.device: torch.device | None = None
        self.trainer = None
        self.ddp: _SyncControlled | None = None
        self._own_group = False

    @classmethod
    def from_env(cls, **kwargs) -> DistributedHooks:
        """Rank and world size from the variables torchrun sets."""
        world = _env_int("WORLD_SIZE")
        return cls(
            _env_int("RANK"),
            world,
            _env_int("LOCAL_RANK", 0),
            _env_int("LOCAL_WORLD_SIZE", world),
            **kwargs,
        )

    # ------------------------------------------------------------------------------------------ set-up
    def attach(self, trainer) -> None:
        self.trainer = trainer
        trainer.add_callback("on_train_start", self._on_train_start)
        trainer.add_callback("on_epoch_start", self._on_epoch_start)
        trainer.add_callback("on_step_end", self._on_step_end)

    def select_device(self, device: torch.device) -> torch.device:
        """CUDA: ``cuda:LOCAL_RANK`` with NCCL; CPU: gloo. Starts the process group; ranks other than 0 then wait
        until rank 0 has built the datasets (and their caches)."""
        if device.type == "cuda":
            if self.local_rank >= torch.cuda.device_count():
                raise ValueError(
                    f"process LOCAL_RANK={self.local_rank} needs GPU {self.local_rank} but {torch.cuda.device_count()} "
                    "are visible; expected one visible GPU per process on each node (--nproc-per-node)."
                )
            device = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(device)
        elif device.type != "cpu":
            raise ValueError(f"device {device} is not supported by torchrun training; expected cuda or cpu.")
        self.device = device
        if not dist.is_initialized():
            backend = "nccl" if device.type == "cuda" else "gloo"
            timeout = datetime.timedelta(seconds=self.timeout_s)
            kw = {"device_id": device} if device.type == "cuda" else {}
            dist.init_process_group(
                backend, timeout=timeout, rank=self.rank, world_size=self.world_size, **kw
            )
            self._own_group = True
        if dist.get_world_size() != self.world_size or dist.get_rank() != self.rank:
            raise ValueError(
                f"the process group has rank {dist.get_rank()} of {dist.get_world_size()} but the hooks were made for "
                f"rank {self.rank} of {self.world_size}; expected the same."
            )
        if not self.is_main:
            self.barrier()  # pairs with rank 0's barrier in build_train_loader
        return device

    def wrap_model(self, model: nn.Module) -> nn.Module:
        """SyncBatchNorm (``config.sync_bn``), then DDP with summed gradients."""
        if self.trainer is not None and getattr(self.trainer.config, "sync_bn", False):
            if self.device.type == "cuda":
                model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
            else:
                model = convert_cpu_sync_batchnorm(model)
        cuda = self.device.type == "cuda"
        ddp = DistributedDataParallel(
            model,
            device_ids=[self.device.index] if cuda else None,
            output_device=self.device.index if cuda else None,
        )
        ddp.register_comm_hook(dist.group.WORLD, _allreduce_sum_hook)
        self.ddp = _SyncControlled(ddp)
        return self.ddp

    def build_train_loader(self, dataset, batch_size: int, *, workers: int, multi_scale: bool, seed: int):
        """This rank's loader: its share of each global batch of ``batch_size`` images."""
        from y9train.data import YoloBatchSampler
        from y9train.data.loader import loader_for_sampler
        from y9train.setup.device_model import cpu_count

        if batch_size % self.world_size:
            raise ValueError(
                f"batch={batch_size} is the global batch of {self.world_size} processes; expected a multiple of "
                f"{self.world_size}."
            )
        if len(dataset) < self.world_size:
            raise ValueError(
                f"the training set has {len(dataset)} images, fewer than the {self.world_size} processes; expected at "
                "least one image per process."
            )
        if self.is_main:
            self.barrier()  # datasets and caches are built: the other ranks may build theirs
        batches = YoloBatchSampler(dataset, batch_size, shuffle=dataset.augment, multi_scale=multi_scale, seed=seed)
        sampler = DistributedBatchSampler(batches, self.rank, self.world_size)
        return loader_for_sampler(
            dataset,
            sampler,
            workers=min(int(workers), cpu_count() // self.local_world_size),
            pin_memory=self.device is not None and self.device.type == "cuda",
        )

    # ------------------------------------------------------------------------------------------ collectives
    def all_reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.detach().clone()
        dist.all_reduce(out)
        return out / self.world_size

    def broadcast_stop(self, stop: bool) -> bool:
        """Rank 0's decision (only rank 0 validates, so only its fitness history counts)."""
        flag = torch.tensor([1 if stop else 0], dtype=torch.int32, device=self.device)
        dist.broadcast(flag, src=0)
        return bool(flag.item())

    def barrier(self) -> None:
        if self.device is not None and self.device.type == "cuda":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()

    def close(self) -> None:
        """Destroy the process group this object started (nothing else)."""
        if self._own_group and dist.is_initialized():
            dist.destroy_process_group()
        self._own_group = False

    # ------------------------------------------------------------------------------------------ callbacks
    def _on_train_start(self, trainer) -> None:
        trainer.loss_fn.normaliser = GlobalNormaliser(self.world_size)
        # DDP gave every rank rank 0's weights; the EMA copy was taken before, from this rank's own initialisation
        if trainer.start_epoch == 0:
            trainer.ema.module.load_state_dict(trainer.model.state_dict())

    def _set_sync(self, trainer, batch: int) -> None:
        """Whether batch ``batch`` of the epoch ends an accumulation (the trainer's optimiser-step rule)."""
        if self.ddp is not None:
            self.ddp.sync = trainer.will_step(batch)

    def _on_epoch_start(self, trainer) -> None:
        self._set_sync(trainer, 0)

    def _on_step_end(self, trainer) -> None:
        self._set_sync(trainer, trainer.batch_index + 1)
