"""Checkpoints written by the official training scripts themselves (../shared/fixtures/official/real/): they load
through ``load_checkpoint``, ``Detector`` and ``y9 export``, the EMA weights are the ones used; pickles that combine an
allowed global with any other call are refused and run nothing; malformed pickles of every kind get one sentence.
"""

from __future__ import annotations

import builtins
import codecs
import collections
import functools
import os
import sys
import types
import zipfile

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.conftest import shared_path
from tests.train.trainer_fixtures import one_thread  # noqa: F401 - autouse: one torch thread
from y9cli.app import app
from y9core.errors import ModelFileError
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.official_pickle import load_official, placeholder_state_dict
from y9train.models import from_official_state_dict

_SCALAR = (getattr(np, "_core", None) or np.core).multiarray.scalar  # numpy's scalar reconstruction
UNSTRIPPED = "gelan-t-train-py-last-unstripped.pt"
FINAL = "yolov9-t-train-dual-final.pt"


def real(name: str):
    return shared_path("fixtures", "official", "real", name)




def _forward(model, x):
    with torch.no_grad():
        return model.float().eval()(x)


def test_unstripped_last_pt_gives_its_ema_weights():
    """The official train.py last.pt: numpy scalars, optimizer, options; the loaded model is its EMA, not `model`."""
    path = real(UNSTRIPPED)
    ckpt = load_official(path)
    assert isinstance(ckpt["optimizer"]["param_groups"][0]["momentum"], np.float64)  # rebuilt numpy scalar
    assert ckpt["epoch"] == 1 and ckpt["opt"]["epochs"] == 2 and ckpt["updates"] == 2
    ema_sd, raw_sd = placeholder_state_dict(ckpt["ema"]), placeholder_state_dict(ckpt["model"])
    assert ema_sd.keys() == raw_sd.keys()
    differing = [k for k in ema_sd if not torch.equal(ema_sd[k], raw_sd[k])]
    assert len(differing) > 100  # two optimiser steps: the EMA differs from the raw weights everywhere

    model = load_checkpoint(path)
    assert model.name == "gelan-t" and model.nc == 80 and model.names[0] == "person"
    assert model.meta["weights"] == "ema"
    ema_model = from_official_state_dict("gelan-t", {k: v.float() for k, v in ema_sd.items()})
    raw_model = from_official_state_dict("gelan-t", {k: v.float() for k, v in raw_sd.items()})
    mine, ema, raw = (m.state_dict() for m in (model, ema_model, raw_model))
    assert all(torch.equal(mine[k], ema[k]) for k in mine)
    assert sum(not torch.equal(mine[k], raw[k]) for k in mine) > 100
    x = torch.rand(1, 3, 160, 160, generator=torch.Generator().manual_seed(0))
    out = _forward(model, x)
    assert torch.equal(out, _forward(ema_model, x)) and not torch.equal(out, _forward(raw_model, x))


def test_stripped_final_file_loads_its_model_entry():
    path = real(FINAL)
    ckpt = load_official(path)
    assert ckpt["ema"] is None and ckpt["optimizer"] is None
    model = load_checkpoint(path)
    assert model.name == "yolov9-t" and model.meta["weights"] == "model"
    x = torch.rand(1, 3, 160, 160, generator=torch.Generator().manual_seed(1))
    sd = {k: v.float() for k, v in placeholder_state_dict(ckpt["model"]).items()}
    assert torch.equal(_forward(model, x), _forward(from_official_state_dict("yolov9-t", sd), x))


@pytest.mark.parametrize("name", [UNSTRIPPED, FINAL])
def test_detector_runs_the_official_file_with_its_deployed_weights(name):
    """Detector(path) on the torch backend (CPU): raw output = the fused deployment model of the EMA weights."""
    from y9deploy import Detector
    from y9train.reparam import fuse, to_deploy

    path = real(name)
    ckpt = load_official(path)
    entry = "ema" if ckpt["ema"] is not None else "model"
    arch = "gelan-t" if name == UNSTRIPPED else "yolov9-t"
    sd = {k: v.float() for k, v in placeholder_state_dict(ckpt[entry]).items()}
    reference = fuse(to_deploy(from_official_state_dict(arch, sd))).eval()
    x = np.random.default_rng(2).random((1, 3, 160, 160), dtype=np.float32)
    with Detector(path, device="cpu", imgsz=160) as det:
        assert det.backend.name == "torch" and det.names[:2] == ["person", "bicycle"]
        got = det.backend.infer(x)["output0"]
        frame = np.random.default_rng(3).integers(0, 256, (120, 200, 3), dtype=np.uint8)
        dets = det.predict(frame, conf=0.0001)
    want = _forward(reference, torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    assert len(dets) > 0 and dets.xyxy.dtype == np.float32


@pytest.mark.parametrize("name", [UNSTRIPPED, FINAL])
def test_y9_export_of_the_official_file_matches_onnxruntime(tmp_path, name):
    import onnxruntime as ort

    path = real(name)
    out = tmp_path / "m.onnx"
    res = CliRunner().invoke(app, ["export", str(path), "-o", str(out), "--imgsz", "160", "--no-simplify"])
    assert res.exit_code == 0, res.output
    x = np.random.default_rng(4).random((1, 3, 160, 160), dtype=np.float32)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    want = _forward(load_checkpoint(path), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3 * np.abs(want).max())


@pytest.mark.parametrize("name", [UNSTRIPPED, FINAL])
def test_y9_val_of_the_official_file(name, tmp_path):
    """`y9 val` reads the file the official scripts wrote (their coco8 run at 160 px) and evaluates it there."""
    data = shared_path("datasets", "coco8", "data.yaml")
    args = ["val", "--data", str(data), "--model", str(real(name)), "--imgsz", "160", "--device", "cpu",
            "--workers", "0", "--project", str(tmp_path), "--no-plots"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0].startswith("4 images at 160x160, "), res.output
    assert "mAP50-95" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------------------------------ crafted pickles
class _Call:
    """Pickles as the call ``fn(*args)``: what a malicious or malformed checkpoint asks the unpickler to do."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.fixture
def official_classes(monkeypatch):
    """Stand-ins for the official ``models.yolo.DetectionModel`` / ``models.common.Conv`` (so pickle can name them)."""
    for mod in ("models", "models.yolo", "models.common"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))

    def make(module: str, name: str) -> type:
        cls = type(name, (), {"__module__": module, "__qualname__": name})
        setattr(sys.modules[module], name, cls)
        return cls

    return make("models.yolo", "DetectionModel"), make("models.common", "Conv")


def _module_tree(state_dict, root_cls, node_cls):
    """An official-looking module tree (``_parameters`` / ``_buffers`` / ``_modules``) holding ``state_dict``."""

    def node(cls):
        obj = cls()
        obj.__dict__.update(_parameters={}, _buffers={}, _modules={}, _non_persistent_buffers_set=set())
        return obj

    root = node(root_cls)
    for key, value in state_dict.items():
        *path, leaf = key.split(".")
        cur = root
        for part in path:
            cur = cur._modules.setdefault(part, node(node_cls))
        (cur._buffers if "running" in leaf or "num_batches" in leaf else cur._parameters)[leaf] = value
    return root


@functools.cache
def _real_ema_state_dict():
    return placeholder_state_dict(load_official(real(UNSTRIPPED))["ema"])


def _official_gelan_t(official_classes, layers: int | None = None):
    """``(ckpt dict, model object)`` laid out as the official train.py writes it, with the real file's EMA weights
    (only those of its first ``layers`` layers when given: a file the unpickler refuses never reaches the model)."""
    sd = _real_ema_state_dict()
    if layers is not None:
        sd = {k: v for k, v in sd.items() if int(k.split(".")[1]) < layers}
    model = _module_tree(sd, *official_classes)
    model.names = [f"class{i}" for i in range(80)]
    ckpt = {
        "epoch": 3,
        "best_fitness": np.float64(0.25),
        "fitness_curve": np.array([0.1, 0.25]),
        "model": model,
        "ema": None,
        "optimizer": {"param_groups": [{"momentum": np.float64(0.9)}]},
        "opt": {"epochs": 5, "raw": b"\x00\xff bytes"},
        "extra": collections.OrderedDict(a=1, b={1, 2}),
    }
    return ckpt, model


def test_crafted_official_checkpoint_with_numpy_arrays_and_containers_loads(tmp_path, official_classes):
    """The crafted layout is right: it loads (numpy arrays, scalars, bytes, OrderedDict, sets are data)."""
    ckpt, _ = _official_gelan_t(official_classes)
    path = tmp_path / "ok.pt"
    torch.save(ckpt, path)
    back = load_official(path)
    assert back["best_fitness"] == 0.25 and isinstance(back["best_fitness"], np.float64)
    np.testing.assert_array_equal(back["fitness_curve"], [0.1, 0.25])
    assert back["opt"]["raw"] == b"\x00\xff bytes" and back["extra"]["b"] == {1, 2}
    model = load_checkpoint(path)
    assert model.name == "gelan-t" and model.names[1] == "class1" and model.meta["weights"] == "model"


def _attacks(marker):
    """Calls that would create ``marker``: a shell command, eval, exec, and numpy's own ``runstring`` (exec)."""
    from numpy.testing._private.utils import runstring

    code = f"open({str(marker)!r}, 'w').close()"
    return {
        "os.system": _Call(os.system, f"touch {marker}"),
        "builtins.eval": _Call(builtins.eval, code),
        "builtins.exec": _Call(builtins.exec, code),
        "numpy runstring": _Call(runstring, code, {}),
        "numpy.load": _Call(np.load, str(marker)),
    }


@pytest.mark.parametrize("where", ["opt", "names", "scalar", "ordered_dict", "codecs", "parameter"])
@pytest.mark.parametrize(
    "attack", ["os.system", "builtins.eval", "builtins.exec", "numpy runstring", "numpy.load"]
)
def test_an_allowed_global_combined_with_any_other_call_is_refused_and_runs_nothing(
    tmp_path, official_classes, where, attack
):
    marker = tmp_path / "ran"
    call = _attacks(marker)[attack]
    # the first two layers' weights: 30 saves and loads of the whole model were 5 s; the refusal comes while
    # unpickling, before any model is built, so the rest of the weights change nothing here
    ckpt, model = _official_gelan_t(official_classes, layers=2)
    if where == "opt":
        ckpt["opt"]["cfg"] = call
    elif where == "names":
        model.names = call
    elif where == "scalar":
        ckpt["best_fitness"] = _Call(_SCALAR, np.dtype("f8"), call)
    elif where == "ordered_dict":
        ckpt["extra"] = _Call(collections.OrderedDict, call)
    elif where == "codecs":
        ckpt["opt"]["raw"] = _Call(codecs.encode, call, "latin1")
    else:
        conv = model._modules["model"]._modules["0"]._modules["conv"]
        conv._parameters["weight"] = _Call(torch._utils._rebuild_parameter, call, False, {})
    path = tmp_path / "evil.pt"
    torch.save(ckpt, path)
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(path)
    msg = str(err.value)
    assert str(path) in msg and "refused" in msg and "nothing was executed" in msg and "\n" not in msg
    assert not marker.exists()


def _raw_call(module: str, name: str, arg: str) -> bytes:
    """A protocol-2 pickle of ``module.name(arg)``, for names that do not exist anywhere."""
    data = arg.encode()
    return (
        b"\x80\x02c"
        + f"{module}\n{name}\n".encode()
        + b"X"
        + len(data).to_bytes(4, "little")
        + data
        + b"\x85R."
    )


def _with_data_pkl(template, path, data: bytes):
    """``template`` (a torch zip file) with its pickle replaced by ``data``."""
    with zipfile.ZipFile(template) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        for n, b in members.items():
            out.writestr(n, data if n.endswith("/data.pkl") else b)
    return path


def _malformed_cases(official_classes, tmp_path):
    Det, Conv = official_classes
    ckpt, model = _official_gelan_t(official_classes)

    def det(**state):
        obj = Det()
        obj.__dict__.update(state)
        return obj

    cyclic = det(_parameters={}, _buffers={})
    cyclic._modules = {"0": cyclic}
    cases = {
        "cycle": {"model": cyclic},
        "list, not a dict": [model],
        "model is a string": {"model": "weights"},
        "model is a tensor": {"model": torch.zeros(3)},
        "ema is a number": {**ckpt, "ema": 5},
        "parameters are a list": {"model": det(_parameters=[torch.zeros(1)], _modules={})},
        "parameter is a string": {"model": det(_parameters={"w": "x"}, _modules={})},
        "child is an int": {"model": det(_parameters={}, _modules={"0": 7})},
        "names are a tensor": {**ckpt, "model": det(**{**model.__dict__, "names": torch.arange(80)})},
        "object dtype scalar": {**ckpt, "best_fitness": _Call(_SCALAR, np.dtype("O"), "x")},
        "another codec": {**ckpt, "opt": _Call(codecs.encode, "x", "rot13")},
        "OrderedDict of a number": {**ckpt, "extra": _Call(collections.OrderedDict, 5)},
        "torch.device of nonsense": {**ckpt, "extra": _Call(torch.device, "warp-drive")},
    }
    files = {}
    for label, obj in cases.items():
        files[label] = tmp_path / f"{label.replace(' ', '_').replace(',', '')}.pt"
        torch.save(obj, files[label])
    template = files["cycle"]
    for label, (module, name) in {
        "unknown torch._utils function": ("torch._utils", "_rebuild_evil"),
        "torch.nn.functional": ("torch.nn.functional", "relu"),
        "numpy function, not a rebuild helper": ("numpy.core.multiarray", "frombuffer"),
        "unknown numpy module": ("numpy.evil", "scalar"),
        "numpy dotted name": ("numpy", "dtype.__new__"),
        "_codecs.decode": ("_codecs", "decode"),
    }.items():
        files[label] = _with_data_pkl(
            template, tmp_path / f"raw{len(files)}.pt", _raw_call(module, name, "x")
        )
    unstripped = real(UNSTRIPPED).read_bytes()
    for frac in (0.5, 0.999):
        files[f"truncated at {frac}"] = tmp_path / f"cut{frac}.pt"
        files[f"truncated at {frac}"].write_bytes(unstripped[: int(len(unstripped) * frac)])
    files["truncated pickle"] = tmp_path / "cut.pkl"
    files["truncated pickle"].write_bytes(_raw_call("collections", "OrderedDict", "x")[:-3])
    return files


def test_malformed_pickles_of_every_kind_get_one_sentence(tmp_path, official_classes):
    files = _malformed_cases(official_classes, tmp_path)
    for label, path in files.items():
        with pytest.raises(ModelFileError) as err:  # never a raw TypeError / RecursionError / RuntimeError
            load_checkpoint(path)
        msg = str(err.value)
        assert msg.startswith(str(path)) and "\n" not in msg and len(msg) < 400, (label, msg)
        if not label.startswith("truncated") and label not in ("model is a string", "model is a tensor"):
            assert "refused" in msg or "it is not a checkpoint y9 knows" in msg, (label, msg)
        print(label, "->", msg[len(str(path)) :])
