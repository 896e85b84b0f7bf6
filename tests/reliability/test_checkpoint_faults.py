"""Damaged y9 checkpoints: flipped bytes, a changed tensor in a re-written zip, NaN/inf weights, missing or mistyped
entries. Each is refused with one sentence naming the file, by ``load_checkpoint``, ``Detector`` and ``y9 info``; files
written before the digest existed still load.
"""

from __future__ import annotations

import zipfile

import pytest
import torch

from tests.conftest import shared_path, y9_output
from y9core.errors import ModelFileError
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.load import read_checkpoint, save_checkpoint
from y9train.checkpoints.official_pickle import load_official, placeholder_state_dict
from y9train.loop.state import read_train_state, rng_state
from y9train.models import build_model


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("gelan-t", nc=3, names=["scratch", "dent", "crack"]).eval()


@pytest.fixture(scope="module")
def good(model, tmp_path_factory):
    """The intact checkpoint, written once: the tests only read it (each damaged copy goes to its own tmp_path)."""
    return save_checkpoint(model, tmp_path_factory.mktemp("good") / "good.pt", imgsz=320, epoch=4)


def _one_sentence(exc: BaseException, path) -> str:
    msg = str(exc)
    assert msg.startswith(str(path)) and "\n" not in msg and len(msg) < 400, msg
    return msg


def _flip(src, dst, start: int, count: int):
    data = bytearray(src.read_bytes())
    for i in range(start, start + count):
        data[i] ^= 0xA5
    dst.write_bytes(bytes(data))
    return dst


def _data_pkl_offset(path) -> int:
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("/data.pkl"))
    return info.header_offset + 30 + len(info.filename) + len(info.extra) + 40  # inside data.pkl's bytes


def test_digest_is_written_and_an_intact_file_loads(good, model):
    payload = torch.load(good, weights_only=True)
    assert payload["digest"]["tensors"] == len(payload["model"]) and len(payload["digest"]["sha256"]) == 64
    x = torch.rand(1, 3, 96, 96)
    with torch.no_grad():
        assert torch.equal(load_checkpoint(good)(x), model(x))


@pytest.mark.parametrize("where", ["middle", "pickle"])
def test_flipped_bytes_are_refused_by_every_entry_point(good, tmp_path, where):
    size = good.stat().st_size
    start = size // 2 - 2500 if where == "middle" else _data_pkl_offset(good)
    bad = _flip(good, tmp_path / "flipped.pt", start, 5000 if where == "middle" else 8)
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(bad)
    assert "is damaged" in _one_sentence(err.value, bad) and "CRC" in str(err.value)
    with pytest.raises(ModelFileError):
        read_checkpoint(bad)
    from y9deploy import Detector

    with pytest.raises(ModelFileError) as err:
        Detector(bad, device="cpu")
    assert "is damaged" in _one_sentence(err.value, bad)
    res = y9_output("info", bad)  # the console entry point in this process (its own process: tests/cli)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert (
        res.stderr.strip().startswith(f"error: {bad}: is damaged")
        and len(res.stderr.strip().splitlines()) == 1
    )


def test_a_changed_tensor_in_a_rewritten_zip_fails_the_digest(good, tmp_path):
    """Zip CRCs consistent (the file was re-written), one weight changed: only the digest can tell."""
    payload = torch.load(good, weights_only=True)
    key = next(k for k in payload["model"] if k.endswith("conv.weight"))
    payload["model"][key] = payload["model"][key].clone()
    payload["model"][key].view(-1)[7] += 1e-3
    changed = tmp_path / "changed.pt"
    torch.save(payload, changed)
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(changed)
    assert "do not match the sha256 digest" in _one_sentence(err.value, changed)


def test_files_without_a_digest_still_load_and_are_checked_by_the_zip_crcs(good, tmp_path, model):
    payload = torch.load(good, weights_only=True)
    del payload["digest"]
    older = tmp_path / "older.pt"
    torch.save(payload, older)
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(load_checkpoint(older)(x), model(x))
    bad = _flip(older, tmp_path / "older-flipped.pt", older.stat().st_size // 2, 5000)
    with pytest.raises(ModelFileError, match="is damaged"):
        load_checkpoint(bad)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_or_infinite_weights_are_refused_naming_the_tensor(model, tmp_path, value):
    broken = build_model("gelan-t", nc=3).eval()
    broken.load_state_dict(model.state_dict())
    key = next(k for k, v in broken.state_dict().items() if k.endswith("bn.running_var"))
    broken.state_dict()[key][3] = value
    path = save_checkpoint(broken, tmp_path / "nan.pt")
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(path)
    msg = _one_sentence(err.value, path)
    assert f"weight {key} holds" in msg and ("NaN" in msg or "inf" in msg)
    from y9deploy import Detector

    with pytest.raises(ModelFileError, match=key.replace(".", r"\.")):
        Detector(path, device="cpu")


def test_nan_weights_in_an_official_state_dict_are_refused(tmp_path):
    sd = placeholder_state_dict(
        load_official(shared_path("fixtures", "official", "gelan-t-converted-official-format.pt"))["model"]
    )
    key = "model.2.cv1.conv.weight"
    sd[key] = sd[key].clone()
    sd[key].view(-1)[0] = float("nan")
    path = tmp_path / "official-nan.pt"
    torch.save({"model": sd}, path)
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(path)
    assert f"weight {key} holds NaN" in _one_sentence(err.value, path)


def _edit(payload, change):
    change(payload)
    return payload


MALFORMED = {
    "no config": lambda p: p.pop("config"),
    "config a list": lambda p: p.update(config=[1]),
    "nc a string": lambda p: p["config"].update(nc="3"),
    "nc zero": lambda p: p["config"].update(nc=0),
    "names too short": lambda p: p["config"].update(names=["a"]),
    "names not strings": lambda p: p["config"].update(names=[1, 2, 3]),
    "name a number": lambda p: p["config"].update(name=5),
    "fused a string": lambda p: p["config"].update(fused="yes"),
    "arch without layers": lambda p: p["config"].update(arch={"layers": "x"}),
    "no model": lambda p: p.pop("model"),
    "model a list": lambda p: p.update(model=[1]),
    "model holds a string": lambda p: p["model"].update({"x": "y"}),
    "a weight missing": lambda p: p["model"].pop(next(iter(p["model"]))),
    "a weight mis-shaped": lambda p: p["model"].update({next(iter(p["model"])): torch.zeros(1)}),
    "version a string": lambda p: p.update(version="1"),
    "version from the future": lambda p: p.update(version=99),
    "meta a list": lambda p: p.update(meta=[1]),
    "train a list": lambda p: p.update(train=[1]),
    "digest a string": lambda p: p.update(digest="abc"),
}


@pytest.fixture(scope="module")
def good_payload(good):
    """``good`` read once for the module; each case edits its own copy (``_copy``)."""
    return torch.load(good, weights_only=True)


def _copy(payload: dict) -> dict:
    """A copy of ``payload`` that MALFORMED's edits cannot reach through: its dicts copied, the tensors shared (no
    edit changes a tensor in place)."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in payload.items()}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_missing_or_mistyped_entries_are_one_sentence(good_payload, tmp_path, case):
    from y9train.checkpoints.integrity import tensor_digest

    payload = _edit(_copy(good_payload), MALFORMED[case])
    if case.startswith("a weight"):
        payload["digest"] = tensor_digest(payload)  # consistent digest: the entry itself is what is wrong
    path = tmp_path / "edited.pt"
    torch.save(payload, path)
    for load in (load_checkpoint, read_checkpoint):
        if load is read_checkpoint and case.startswith(("a weight", "arch")):
            continue  # only rebuilding the model can tell
        with pytest.raises(ModelFileError) as err:
            load(path)
        _one_sentence(err.value, path)


def _train_state():
    return {"model": {}, "optimizer": {"state": {}, "param_groups": []}, "scaler": None, "ema_updates": 2,
            "epoch": 1, "iteration": 4, "step": 2, "best_fitness": 0.5, "best_epoch": 0,
            "history": [{"epoch": 1}, {"epoch": 2}], "config": {}, "rng": rng_state()}  # fmt: skip


@pytest.fixture(scope="module")
def intact_state_reads(model, tmp_path_factory):
    """The unedited ``_train_state()`` reads back (checked once for the module): each case below fails by its edit."""
    ok = save_checkpoint(model, tmp_path_factory.mktemp("state") / "ok.pt", train_state=_train_state())
    assert read_train_state(ok)[1]["epoch"] == 1


@pytest.mark.parametrize(
    "change",
    [
        "epoch=one",
        "no history",
        "history short",
        "rng a list",
        "optimizer None",
        "best_epoch True",
        "no step",
        "rng torch state cut",
        "rng torch state floats",
        "rng numpy keys short",
        "rng python internal short",
        "rng without numpy",
    ],
)
def test_malformed_training_state_is_one_sentence(model, tmp_path, change, intact_state_reads):
    state = _train_state()
    edits = {
        "epoch=one": {"epoch": "one"},
        "history short": {"history": [{"epoch": 1}]},
        "rng a list": {"rng": []},
        "optimizer None": {"optimizer": None},
        "best_epoch True": {"best_epoch": True},
    }
    state.update(edits.get(change, {}))
    rng = state["rng"]
    if change == "rng torch state cut":
        rng["torch"] = rng["torch"][:100]
    elif change == "rng torch state floats":
        rng["torch"] = rng["torch"].float()
    elif change == "rng numpy keys short":
        rng["numpy"]["keys"] = rng["numpy"]["keys"][:10]
    elif change == "rng python internal short":
        rng["python"]["internal"] = rng["python"]["internal"][:5]
    elif change == "rng without numpy":
        rng.pop("numpy")
    if change.startswith("no "):
        state.pop(change[3:])
    path = save_checkpoint(model, tmp_path / "last.pt", train_state=state)
    with pytest.raises(ModelFileError) as err:
        read_train_state(path)
    assert "(a damaged or hand-edited last.pt)" in _one_sentence(
        err.value, path
    ) or "holds no training state" in str(err.value)
