"""Checkpoints: own format round trip, official-format files without the official code, unsafe pickles."""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.conftest import shared_path
from y9cli.app import app
from y9core.errors import ModelFileError
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.load import read_checkpoint, save_checkpoint
from y9train.models import build_model
from y9train.reparam import fuse

OFFICIAL_FILES = ("yolov9-t-dual-official-format.pt", "gelan-t-converted-official-format.pt")


def test_official_checkpoints_load_without_official_code_float64(monkeypatch):
    """Where ``models`` and ``utils`` cannot be imported (None in sys.modules, any of their submodules taken out, for
    this test only), both official-format files load and reproduce FILE.main in float64 within 1e-6 relative."""
    fixtures = shared_path("fixtures", "official")
    for mod in [m for m in sys.modules if m.split(".")[0] in ("models", "utils")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "models", None)  # any import of the official code now fails
    monkeypatch.setitem(sys.modules, "utils", None)
    for mod in ("models", "utils", "models.yolo"):
        with pytest.raises(ImportError):
            __import__(mod)
    with np.load(fixtures / "official_parity_outputs.npz") as ref:
        x = torch.from_numpy(ref["input"]).double()
        names = set()
        for name in OFFICIAL_FILES:
            model = load_checkpoint(fixtures / name).double()
            with torch.no_grad():
                out = model(x).numpy()
            want = ref[name + ".main"]
            rel = np.abs(out - want).max() / np.abs(want).max()
            assert rel <= 1e-6, (name, rel)
            names.add(model.name)
    assert names == {"yolov9-t", "gelan-t"}


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("container", ["torch-zip", "plain-pickle"])
def test_pickle_that_would_run_a_shell_command_is_refused(tmp_path, container):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    payload = {"model": _Evil(marker), "epoch": -1}
    if container == "torch-zip":
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload, protocol=2))
    with pytest.raises(ModelFileError) as err:
        load_checkpoint(path)
    assert (
        str(path) in str(err.value)
        and "system" in str(err.value)
        and "nothing was executed" in str(err.value)
    )
    assert not marker.exists()


def test_own_format_round_trip_and_weights_only(tmp_path):
    torch.manual_seed(3)
    model = build_model("gelan-t", nc=3, names=["scratch", "dent", "crack"]).eval()
    path = save_checkpoint(model, tmp_path / "best.pt", imgsz=320, epoch=7, metrics={"map50": 0.5})
    raw = torch.load(path, weights_only=True)  # no pickled classes in our format
    assert raw["format"] == "y9-checkpoint" and raw["meta"]["epoch"] == 7
    loaded = load_checkpoint(path)
    assert loaded.names == ["scratch", "dent", "crack"] and loaded.meta["imgsz"] == 320
    x = torch.rand(2, 3, 128, 96)
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    # a fused model round-trips too
    fused = fuse(build_model("yolov9-t", nc=2).eval())
    path2 = save_checkpoint(fused, tmp_path / "fused.pt")
    with torch.no_grad():
        assert torch.equal(fused(x), load_checkpoint(path2)(x))


def test_save_is_atomic(tmp_path, monkeypatch):
    model = build_model("gelan-t", nc=1)
    path = save_checkpoint(model, tmp_path / "last.pt", epoch=1)
    before = path.read_bytes()

    def broken_save(obj, f, *a, **k):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(model, path, epoch=2)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary file left behind


def test_a_checkpoint_is_readable_as_every_other_output_is(tmp_path):
    """Its mode is what the umask makes of 0o644 (a teammate or a serving container reads it), as for the files
    y9core.files.atomic_write writes; it was 0o600 (mkstemp's)."""
    from y9core.files.atomic_write import atomic_write

    mask = os.umask(0o022)
    try:
        ckpt = save_checkpoint(build_model("gelan-t", nc=1), tmp_path / "best.pt")
        other = atomic_write(tmp_path / "results.csv", "epoch\n")
        assert (ckpt.stat().st_mode & 0o777) == (other.stat().st_mode & 0o777) == 0o644
        os.umask(0o077)  # a stricter umask is kept
        assert (save_checkpoint(build_model("gelan-t", nc=1), tmp_path / "private.pt").stat().st_mode & 0o777) == 0o600
    finally:
        os.umask(mask)


def test_missing_empty_truncated_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"checkpoint .*nope.pt does not exist; expected a .pt checkpoint"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(IsADirectoryError, match=rf"checkpoint {tmp_path} is a folder; expected a .pt checkpoint"):
        load_checkpoint(tmp_path)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty.pt: is empty"):
        load_checkpoint(empty)
    good = save_checkpoint(build_model("gelan-t", nc=1), tmp_path / "good.pt")
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelFileError, match="cut.pt: is truncated or corrupt"):
        load_checkpoint(cut)
    noise = tmp_path / "noise.pt"
    noise.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ModelFileError, match="noise.pt"):
        load_checkpoint(noise)
    foreign = tmp_path / "foreign.pt"
    torch.save({"layer.weight": torch.zeros(3, 3)}, foreign)
    with pytest.raises(ModelFileError, match="match none of the known architectures"):
        load_checkpoint(foreign)
    with pytest.raises(ModelFileError, match="is not a y9 checkpoint"):
        read_checkpoint(foreign)


def test_cli_reparam_and_info_on_official_checkpoint(tmp_path):
    src = shared_path("fixtures", "official", "yolov9-t-dual-official-format.pt")
    out = tmp_path / "gelan-t.pt"
    runner = CliRunner()
    res = runner.invoke(app, ["reparam", str(src), str(out), "--fuse"])
    assert res.exit_code == 0, res.output
    assert "yolov9-t -> gelan-t" in res.output
    deployed = load_checkpoint(out).double()
    original = load_checkpoint(src).double()
    x = torch.rand(1, 3, 160, 160, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(deployed(x), original(x), rtol=1e-5, atol=1e-4)  # fused in float32
    res = runner.invoke(app, ["info", str(out), "--json"])
    assert res.exit_code == 0 and '"name": "gelan-t"' in res.output and '"fused": true' in res.output
