"""The training state of ``last.pt`` stored packed (``y9train.checkpoints.packing``): one buffer instead of one
tensor per weight and moment, read back as the structure that was saved, tensor for tensor; a malformed packed
state is one sentence; version 1 files (unpacked) still resume.

The oracle is the structure itself: every tensor compared with ``torch.equal``, dtype and shape, in order.
"""

from __future__ import annotations

import pytest
import torch

from y9core.errors import ModelFileError
from y9train.checkpoints.integrity import iter_tensors, tensor_digest
from y9train.checkpoints.load import read_checkpoint, save_checkpoint
from y9train.checkpoints.packing import DTYPES, is_packed, pack, unpack
from y9train.loop.state import read_train_state, rng_state
from y9train.models import build_model


def _same(a, b) -> None:
    """``a`` and ``b`` hold the same values in the same structure: containers of the same types, equal plain values,
    tensors of the same dtype, shape, memory layout (strides) and values (NaN equal to NaN)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and not b.requires_grad, (a, b)
        assert a.stride() == b.stride() or a.numel() <= 1, (a.stride(), b.stride())
        assert torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0)))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _mixed() -> dict:
    g = torch.Generator().manual_seed(0)
    wide = torch.randn(4, 6, generator=g)
    return {
        "weights": {f"w{i}": torch.randn(3, i + 1, generator=g, dtype=DTYPES[i % 4]) for i in range(5)},
        "every dtype": [torch.ones(3, dtype=d) for d in DTYPES],
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 7),
        "odd bytes": torch.arange(5, dtype=torch.uint8),  # 5 bytes: the next tensor starts after padding
        "after odd": torch.tensor([1.0, float("nan"), float("inf")], dtype=torch.float64),
        "strided": wide.t(),  # not contiguous
        "channels_last": torch.randn(2, 3, 4, 5, generator=g).contiguous(memory_format=torch.channels_last),
        "grad": torch.ones(2, requires_grad=True),
        "tuple": (torch.tensor([1, 2]), 0.9, "adamw"),
        "plain": {"epoch": 3, "none": None, "names": ["a", "b"], "lr": 0.01, "flag": True},
        "nested": [{"step": torch.tensor(7.0), "exp_avg": torch.randn(2, 2, generator=g)}],
    }


def test_pack_then_unpack_gives_the_structure_back_tensor_for_tensor():
    obj = _mixed()
    packed = pack(obj)
    assert is_packed(packed) and not is_packed(obj)
    assert sum(1 for _ in iter_tensors(packed)) == 5  # the index and the buffer, whatever the count
    back = unpack(packed)
    _same(obj, back)
    tensors = [t for _, t in iter_tensors(back)]
    assert all(t.untyped_storage().nbytes() == t.numel() * t.element_size() for t in tensors)  # own storage each
    assert packed["blob"].numel() % 8 == 0


def test_pack_is_a_copy():
    obj = {"w": torch.zeros(3)}
    packed = pack(obj)
    obj["w"] += 1
    assert torch.equal(unpack(packed)["w"], torch.zeros(3))


@pytest.fixture(scope="module")
def resumable(tmp_path_factory):
    """A gelan-t's checkpoint with a real training state: the raw weights and an AdamW state after one step, laid out
    channels_last as the trainer lays them out (its moments must come back in their parameters' layout)."""
    torch.manual_seed(0)
    model = build_model("gelan-t", nc=3, names=["a", "b", "c"]).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    out = model(torch.rand(2, 3, 64, 64))
    sum(t.float().mean() for _, t in iter_tensors({"out": out})).backward()
    opt.step()
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scaler": None, "ema_updates": 1,
             "epoch": 0, "iteration": 1, "step": 1, "best_fitness": 0.0, "best_epoch": 0,
             "history": [{"epoch": 1}], "config": {"epochs": 2}, "rng": rng_state(), "average": None}  # fmt: skip
    path = save_checkpoint(model.eval(), tmp_path_factory.mktemp("packed") / "last.pt", train_state=state, epoch=1)
    return path, state, model


def test_last_pt_stores_its_training_state_packed_and_reads_it_back(resumable):
    path, state, model = resumable
    raw = torch.load(path, weights_only=True)
    assert raw["version"] == 2 and is_packed(raw["train"])
    stored = sum(1 for _ in iter_tensors(raw))
    assert stored == len(raw["model"]) + 5 == raw["digest"]["tensors"]  # the weights, then five for the state
    assert sum(1 for _ in iter_tensors(state)) > 2 * len(raw["model"])  # what it would have held one by one
    payload, back = read_train_state(path)
    _same(state, back)
    assert payload["train"] is back and not is_packed(back)


def _edited(raw: dict, change: str) -> dict:
    train = dict(raw["train"])
    if change == "blob cut":
        train["blob"] = train["blob"][:-8]
    elif change == "blob too long":
        train["blob"] = torch.cat([train["blob"], torch.zeros(8, dtype=torch.uint8)])
    elif change == "blob floats":
        train["blob"] = train["blob"].float()
    elif change == "unknown dtype":
        train["dtypes"] = train["dtypes"].clone().fill_(200)
    elif change == "negative size":
        train["dims"] = -train["dims"]
    elif change == "ranks missing":
        train.pop("ndims")
    elif change == "an order not a permutation":
        train["orders"] = torch.zeros_like(train["orders"])
    elif change == "a tensor place too many":
        train["tree"] = {**train["tree"], "extra": train["tree"]["rng"]["torch"]}
    return {**raw, "train": train}


@pytest.mark.parametrize(
    "change",
    ["blob cut", "blob too long", "blob floats", "unknown dtype", "negative size", "ranks missing",
     "an order not a permutation", "a tensor place too many"],
)  # fmt: skip
def test_a_malformed_packed_state_is_one_sentence(resumable, tmp_path, change):
    path, _, _ = resumable
    raw = _edited(torch.load(path, weights_only=True), change)
    raw["digest"] = tensor_digest(raw)  # a consistent digest: the packed state itself is what is wrong
    bad = tmp_path / "last.pt"
    torch.save(raw, bad)
    with pytest.raises(ModelFileError) as err:
        read_checkpoint(bad)
    msg = str(err.value)
    assert msg.startswith(f"{bad}: its packed training state cannot be read (") and "\n" not in msg, msg
    assert "(a damaged or hand-edited last.pt)" in msg


def test_a_version_1_last_pt_with_its_state_unpacked_still_resumes(resumable, tmp_path):
    path, state, _ = resumable
    raw = torch.load(path, weights_only=True)
    old = {**raw, "version": 1, "train": unpack(raw["train"])}
    old.pop("digest")
    old["digest"] = tensor_digest(old)
    v1 = tmp_path / "last.pt"
    torch.save(old, v1)
    assert torch.load(v1, weights_only=True)["train"]["optimizer"]["state"]  # stored one tensor at a time
    _same(state, read_train_state(v1)[1])
