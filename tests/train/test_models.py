"""The ten models against the official implementation's outputs (../shared/fixtures/official)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tests.train.model_fixtures import fixture_input, official_weights_model, parity_keys, parity_outputs
from y9train.models import MODEL_NAMES, build_model, from_official_state_dict
from y9train.models.head import make_anchors
from y9train.reparam import fuse, to_deploy


def _close(out: torch.Tensor, ref: np.ndarray) -> None:
    """max |diff| <= 1e-6 x max |ref| (float64 comparison)."""
    diff = np.abs(out.detach().numpy() - ref).max()
    assert diff <= 1e-6 * np.abs(ref).max(), f"max |diff| {diff:.3e} vs max |ref| {np.abs(ref).max():.3e}"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_official_parity_then_deploy_then_fuse_float64(name):
    """One model build per architecture (the float64 passes are the slow part):
    1. its outputs (main, and aux for yolov9-*) equal the official ones, and the parameter count;
    2. ``to_deploy`` (yolov9-X -> gelan-X) reproduces the main output;
    3. ``fuse`` works in float64, leaves no BatchNorm and keeps the output."""
    model = official_weights_model(name).double()
    assert sum(p.numel() for p in model.parameters()) == parity_keys()["models"][name]["params"]
    x = fixture_input().double()
    ref = parity_outputs()[f"{name}.main"]
    with torch.no_grad():
        if model.is_dual:
            main, aux = model(x, return_aux=True)
            _close(aux, parity_outputs()[f"{name}.aux"])
        else:
            main = model(x)
        assert main.shape == (1, 84, 1344)
        _close(main, ref)

        deployed = to_deploy(model)
        if model.is_dual:
            assert deployed.name == name.replace("yolov9", "gelan") and not deployed.is_dual
            assert sum(p.numel() for p in deployed.parameters()) < parity_keys()["models"][name]["params"]
            _close(deployed(x), ref)
        del model
        fused = fuse(deployed)
        assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in fused.modules())
        assert all(p.dtype == torch.float64 for p in fused.parameters())
        _close(fused(x), ref)


def test_train_mode_returns_branches_main_first():
    model = build_model("yolov9-t", nc=3).train()
    branches = model(torch.rand(2, 3, 64, 96))
    assert len(branches) == 2 and all(len(b) == 3 for b in branches)
    for level, (h, w) in enumerate([(8, 12), (4, 6), (2, 3)]):
        assert branches[0][level].shape == (2, 64 + 3, h, w)
    # The main branch in train mode decodes to the eval output.
    model.eval()
    with torch.no_grad():
        main_eval = model(torch.zeros(1, 3, 64, 96))
        model.train()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.eval()  # same normalisation as eval
        raw = model(torch.zeros(1, 3, 64, 96))[0]
    decoded = model.head.decode(raw, model.head.dfl2)
    torch.testing.assert_close(decoded, main_eval)


def test_make_anchors_row_major_cell_centres():
    feats = [torch.zeros(1, 1, 2, 3), torch.zeros(1, 1, 1, 2)]
    points, strides = make_anchors(feats, [8, 16])
    expected = [
        (0.5, 0.5),
        (1.5, 0.5),
        (2.5, 0.5),
        (0.5, 1.5),
        (1.5, 1.5),
        (2.5, 1.5),
        (0.5, 0.5),
        (1.5, 0.5),
    ]
    assert points.tolist() == [list(p) for p in expected]
    assert strides.squeeze(1).tolist() == [8] * 6 + [16] * 2


def test_unknown_model_lists_valid_names():
    with pytest.raises(ValueError, match="unknown model 'yolov9-x'.*gelan-c"):
        build_model("yolov9-x")


def test_bad_state_dict_names_first_keys():
    sd = build_model("gelan-t").state_dict()
    sd.pop("model.0.conv.weight")
    sd["model.99.extra"] = torch.zeros(1)
    sd["model.1.conv.weight"] = torch.zeros(5, 5, 3, 3)
    with pytest.raises(ValueError) as err:
        from_official_state_dict("gelan-t", sd)
    msg = str(err.value)
    assert "missing keys: model.0.conv.weight" in msg
    assert "unexpected keys: model.99.extra" in msg
    assert "model.1.conv.weight (5, 5, 3, 3) vs (32, 16, 3, 3)" in msg


def test_gradient_checkpointing_same_outputs_grads_and_bn_stats():
    torch.manual_seed(0)
    ref = build_model("gelan-t", nc=4).train()
    ckpt = copy.deepcopy(ref).set_grad_checkpointing(True)
    x = torch.rand(2, 3, 64, 64)
    outs = []
    for model in (ref, ckpt):
        y = model(x)
        loss = sum((f.float() ** 2).mean() for branch in y for f in branch)
        loss.backward()
        outs.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(outs[0][0], outs[1][0])
    for g0, g1 in zip(outs[0][1], outs[1][1], strict=True):
        torch.testing.assert_close(g0, g1, rtol=1e-5, atol=1e-6)
    # BatchNorm statistics updated exactly once per step despite the recomputation
    for (k, v0), v1 in zip(ref.state_dict().items(), ckpt.state_dict().values(), strict=True):
        torch.testing.assert_close(v0, v1, msg=k)
