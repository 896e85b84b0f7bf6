"""CUDA graphs for training (``cuda_graph=true``): when they apply, and that a run where they do not is the eager run.

The graphed replay itself needs a GPU: benchmarks/check_cuda_graph.py trains the same batches eagerly and graphed
there and compares losses and parameters (equal bit for bit on an H200, docs/benchmarks.md), bench_train_gpu.py
--cuda-graph on|off measures the speed. On this CPU box the tests hold the rule that decides, and that asking for
graphs where they do not apply changes nothing but one report line.
"""

from __future__ import annotations

import pytest
import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config, without_timing  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.optimisation.graphed_network import GraphedNetwork, graphed_network
from y9train.optimisation.hyp import TrainConfig


def test_the_rule_names_why_graphs_do_not_apply():
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    flags = {"compile": False, "grad_checkpointing": False, "distributed": False}
    assert GraphedNetwork.applies(cuda, **flags) is None
    assert "CUDA device" in GraphedNetwork.applies(cpu, **flags)
    assert "torch.compile" in GraphedNetwork.applies(cuda, **{**flags, "compile": True})
    assert "checkpointing" in GraphedNetwork.applies(cuda, **{**flags, "grad_checkpointing": True})
    assert "distributed" in GraphedNetwork.applies(cuda, **{**flags, "distributed": True})
    assert "multi_scale" in GraphedNetwork.applies(cuda, **{**flags, "multi_scale": True})


def test_not_requested_means_no_wrapper_and_no_report():
    said: list[str] = []
    net = torch.nn.Linear(2, 2)
    kw = {"compile": False, "grad_checkpointing": False, "distributed": False, "report": said.append}
    assert graphed_network(net, list(net.parameters()), torch.device("cuda"), requested=False, **kw) is None
    assert said == []
    assert graphed_network(net, list(net.parameters()), torch.device("cpu"), requested=True, **kw) is None
    assert len(said) == 1 and "eagerly" in said[0]


def test_the_default_uses_graphs_wherever_they_apply_and_says_nothing_elsewhere():
    """``cuda_graph`` None (TrainConfig's default): a GraphedNetwork on a CUDA device of a one-process eager run;
    nothing, and no report, on the CPU or with compile / checkpointing / several processes."""
    from y9train.optimisation.hyp import TrainConfig

    assert TrainConfig().cuda_graph is None
    said: list[str] = []
    net = torch.nn.Linear(2, 2)
    params = list(net.parameters())
    kw = {"compile": False, "grad_checkpointing": False, "distributed": False, "report": said.append}
    auto = graphed_network(net, params, torch.device("cuda", 0), requested=None, **kw)
    assert isinstance(auto, GraphedNetwork) and auto.module is net and auto.shape is None  # captured at first call
    assert graphed_network(net, params, torch.device("cpu"), requested=None, **kw) is None
    for flag in ("compile", "grad_checkpointing", "distributed", "multi_scale"):
        assert graphed_network(net, params, torch.device("cuda", 0), requested=None, **{**kw, flag: True}) is None
    assert said == []


def test_cuda_graph_on_cpu_trains_exactly_like_the_eager_run(tmp_path):
    data = coco_pair(tmp_path)
    runs = []
    for name, graph in (("eager", False), ("graph", True)):
        trainer = Trainer(tiny_config(data, tmp_path, name=name, cuda_graph=graph, device="cpu", save=False))
        result = trainer.fit()
        assert trainer.graphed is None  # the rule said no: the eager module trained
        runs.append((without_timing(result.history), trainer.model.state_dict()))
    assert runs[0][0] == runs[1][0]
    for k, v in runs[0][1].items():
        torch.testing.assert_close(runs[1][1][k], v, rtol=0, atol=0, msg=k)


def test_kept_buffers_puts_batchnorm_statistics_back_in_place():
    """The capture's warm-up forwards must leave no trace (a resumed run captures again and must end where the
    uninterrupted run ends): every buffer gets its old value back, in the same storage a graph points at."""
    from torch import nn

    from y9train.optimisation.graphed_network import kept_buffers

    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.SiLU(), nn.Conv2d(4, 2, 1), nn.BatchNorm2d(2)
    ).train()
    buffers = dict(net.named_buffers())
    before = {k: b.clone() for k, b in buffers.items()}
    storage = {k: b.data_ptr() for k, b in buffers.items()}
    with kept_buffers(net):
        for _ in range(3):
            net(torch.randn(2, 3, 8, 8)).sum().backward()
        moved = [k for k, b in buffers.items() if not torch.equal(b, before[k])]
    assert sorted(moved) == sorted(before)  # the forwards moved every statistic and count
    for k, b in net.named_buffers():
        assert torch.equal(b, before[k]), k
        assert b.data_ptr() == storage[k], k


def test_kept_buffers_restores_after_an_error_too():
    from torch import nn

    from y9train.optimisation.graphed_network import kept_buffers

    bn = nn.BatchNorm1d(3).train()  # the test fails if the restore is skipped on the error path
    mean = bn.running_mean.clone()
    try:
        with kept_buffers(bn):
            bn(torch.randn(4, 3) + 5.0)
            raise RuntimeError("capture failed")
    except RuntimeError:
        pass
    assert torch.equal(bn.running_mean, mean) and int(bn.num_batches_tracked) == 0


def test_the_capture_warmup_is_a_bounded_option():
    net = GraphedNetwork(torch.nn.Linear(2, 2), [], warmup_iters=1)
    assert net.warmup_iters == 1 and net.capture_seconds is None  # set by the capture (CUDA)
    with pytest.raises(ValueError, match="at least 1 warm-up"):
        GraphedNetwork(torch.nn.Linear(2, 2), [], warmup_iters=0)
    with pytest.raises(ValueError, match="cuda_graph_warmup=0"):
        TrainConfig(data="d.yaml", cuda_graph_warmup=0)
    with pytest.raises(ValueError, match="cudnn_benchmark_limit=-1"):
        TrainConfig(data="d.yaml", cudnn_benchmark_limit=-1)
