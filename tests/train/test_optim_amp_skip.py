"""A step that GradScaler skips (inf/NaN gradients, routine in the first fp16 steps) must leave the optimiser and
the weights exactly as they were, whichever implementation ``build_optimizer`` picks for the device.

Why this is a test: torch's fused SGD (torch 2.11 on the H200, 2.13 here) creates its momentum buffers with
``empty_like`` on the first step and then skips the whole kernel when ``found_inf`` is set, so a skipped first step
leaves uninitialised memory as momentum; the next step turns the weights into garbage. In the session-6 H200 runs
``--hyp official`` (SGD, fp16 with a GradScaler) held NaN weights from the first epoch on. The oracle here is
torch's plain for-loop implementation (``foreach=False, fused=False``), driven through the same GradScaler."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from y9train.optimisation.hyp import Hyp
from y9train.optimisation.optim import build_optimizer, optimizer_implementation

HYPS = {
    "sgd": Hyp(optimizer="sgd", lr0=0.01, momentum=0.937),
    "adamw": Hyp(optimizer="adamw", lr0=0.001, momentum=0.9),
}


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.SiLU(), nn.Conv2d(8, 4, 1))


def _reference_optimizer(model: nn.Module, ref_model: nn.Module, built: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The groups and settings of ``built`` (over ``model``) for ``ref_model``, with torch's for-loop implementation."""
    position = {id(p): i for i, p in enumerate(model.parameters())}
    ref_params = list(ref_model.parameters())
    groups = []
    for g in built.param_groups:
        group = {k: v for k, v in g.items() if k not in ("fused", "foreach", "params")}
        group["params"] = [ref_params[position[id(p)]] for p in g["params"]]
        groups.append(group)
    return type(built)(groups, foreach=False, fused=False)


def _steps(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    """Step 1: gradients hold an inf (GradScaler skips the step). Steps 2-3: finite gradients."""
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x = torch.randn(2, 3, 12, 12, generator=torch.Generator().manual_seed(1))
    for i in range(3):
        opt.zero_grad(set_to_none=True)
        scaler.scale(model(x).square().mean()).backward()
        if i == 0:
            next(model.parameters()).grad.view(-1)[0] = float("inf")
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        if i == 0:
            yield


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("kind", sorted(HYPS))
def test_a_skipped_step_leaves_weights_and_state_as_the_reference(kind, device):
    """``device``: the implementation build_optimizer picks for that device type; the tensors stay on the CPU,
    where torch runs the fused and foreach kernels too."""
    hyp = HYPS[kind]
    model, ref_model = _model(), _model()
    opt = build_optimizer(model, hyp, batch=64, device=torch.device(device))
    ref = _reference_optimizer(model, ref_model, opt)
    before = [p.detach().clone() for p in model.parameters()]
    run, ref_run = _steps(model, opt), _steps(ref_model, ref)
    next(run), next(ref_run)  # after the skipped step
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach(), b), "a skipped step changed the weights"
    for _ in run:
        pass
    for _ in ref_run:
        pass
    for p, q in zip(model.parameters(), ref_model.parameters()):
        assert torch.isfinite(p).all()
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)


def test_the_implementation_rule():
    """Fused only where it honours a skipped step (AdamW, on CUDA and the CPU); SGD never fused; foreach elsewhere."""
    assert optimizer_implementation("adamw", "cuda") == {"fused": True}
    assert optimizer_implementation("sgd", "cuda") == {"foreach": True}
    assert optimizer_implementation("adamw", "cpu") == {"fused": True}
    assert optimizer_implementation("sgd", "cpu") == {"foreach": True}
    assert optimizer_implementation("adamw", "mps") == {"foreach": True}


@pytest.mark.parametrize("kind", sorted(HYPS))
def test_resume_puts_back_the_rule_over_a_saved_state(kind):
    """A state dict saved by an older y9 (fused SGD on CUDA) or on another device: loading it brings its flags
    along; ``set_implementation`` replaces them with the rule's choice for the device resumed on."""
    from y9train.optimisation.optim import set_implementation

    model = _model()
    opt = build_optimizer(model, HYPS[kind], batch=64, device=torch.device("cpu"))
    state = opt.state_dict()
    for g in state["param_groups"]:
        g["fused"], g["foreach"] = True, False  # as an older y9 saved SGD on CUDA
    opt.load_state_dict(state)
    set_implementation(opt, torch.device("cuda"))
    want = optimizer_implementation(kind, "cuda")
    for g in opt.param_groups:
        assert g["fused"] == want.get("fused", False) and g["foreach"] == want.get("foreach", False)


@pytest.mark.parametrize("saved_channels_last", [True, False])
def test_a_state_of_another_layout_is_laid_out_as_its_parameters(saved_channels_last):
    """A fused AdamW step over moments laid out unlike their parameters reads the wrong elements (measured: 0.16 off
    the for-loop reference on a 4x3x3x3 weight); ``set_implementation`` after loading lays them out as the
    parameters, and the step equals the reference."""
    from y9train.optimisation.optim import set_implementation

    g0 = torch.Generator().manual_seed(0)
    w0, grad = torch.randn(4, 3, 3, 3, generator=g0), torch.randn(4, 3, 3, 3, generator=g0)
    saved_layout = torch.channels_last if saved_channels_last else torch.contiguous_format
    run_layout = torch.contiguous_format if saved_channels_last else torch.channels_last

    def first_step(layout, **impl) -> tuple[torch.Tensor, dict]:
        p = nn.Parameter(w0.clone().contiguous(memory_format=layout))
        opt = torch.optim.AdamW([p], lr=0.1, **impl)
        p.grad = grad.clone().contiguous(memory_format=layout)
        opt.step()
        return p.detach().clone(), opt.state_dict()

    def second_step(w, state, layout, **impl) -> torch.Tensor:
        p = nn.Parameter(w.clone().contiguous(memory_format=layout))
        opt = torch.optim.AdamW([p], lr=0.1, **impl)
        opt.load_state_dict(state)
        if impl.get("fused"):
            set_implementation(opt, torch.device("cpu"))
            assert all(t.stride() == p.stride() for t in opt.state[p].values() if t.ndim)
        p.grad = (0.5 * grad).contiguous(memory_format=layout)
        opt.step()
        return p.detach()

    w, state = first_step(saved_layout, fused=True)
    assert state["state"][0]["exp_avg"].is_contiguous(memory_format=saved_layout)
    reference = second_step(*first_step(saved_layout, foreach=False, fused=False), run_layout, foreach=False, fused=False)
    torch.testing.assert_close(second_step(w, state, run_layout, fused=True), reference, rtol=1e-6, atol=1e-6)

