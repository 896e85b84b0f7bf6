"""Bad input reaches the user as one sentence: missing data.yaml or folders, a class-count mismatch between data and
checkpoint (and --new-head keeping the backbone), unreadable images (reported by path, skipped), unknown models.
"""

from __future__ import annotations

import io

import pytest
import torch
import yaml
from rich.console import Console

from tests.conftest import y9_output
from tests.train.data_fixtures import COCO_36, COCO_42, add_image, write_yaml
from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9core.errors import DataError
from y9train.checkpoints.load import read_checkpoint, save_checkpoint
from y9train.loop.trainer import Trainer
from y9train.models import build_model
from y9train.reports.reporting import Reporter


def _one_sentence(msg: str) -> None:
    assert "\n" not in msg and msg.rstrip().endswith(".") and len(msg) < 400, msg


def two_class_data(root) -> str:
    """The COCO test images relabelled with 2 classes."""
    add_image(root, "train", "a.jpg", COCO_36, "0 0.5 0.4 0.6 0.6\n1 0.3 0.7 0.2 0.3\n")
    add_image(root, "train", "b.jpg", COCO_42, "1 0.5 0.5 0.4 0.5\n")
    add_image(root, "val", "c.jpg", COCO_36, "0 0.5 0.4 0.6 0.6\n")
    return str(write_yaml(root, nc=2, names=["defect", "scratch"]))


def test_missing_data_yaml_is_one_sentence_from_the_cli(tmp_path):
    """Through the console entry point in this process (the train command's own process is tested in
    test_trainer.py and tests/cli/test_signals.py)."""
    missing = tmp_path / "nowhere" / "data.yaml"
    proc = y9_output("train", "--data", missing, "--model", "gelan-t", "--project", tmp_path / "runs")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("error: ") and str(missing) in err and "does not exist" in err
    _one_sentence(err)


def test_data_yaml_pointing_at_a_missing_folder(tmp_path):
    data = coco_pair(tmp_path)
    raw = yaml.safe_load(data.read_text())
    raw["val"] = "images/nope"
    data.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataError, match="images/nope, which does not exist") as info:
        Trainer(tiny_config(data, tmp_path)).fit()
    _one_sentence(str(info.value))
    assert not (tmp_path / "runs").exists()  # nothing written before the data was checked


def test_class_count_mismatch_and_new_head(tmp_path):
    data = two_class_data(tmp_path / "d")
    ckpt = tmp_path / "coco.pt"
    torch.manual_seed(0)
    source = build_model("gelan-t", nc=80)
    save_checkpoint(source, ckpt)
    with pytest.raises(DataError) as info:
        Trainer(tiny_config(data, tmp_path, model=str(ckpt))).fit()
    msg = str(info.value)
    _one_sentence(msg)
    assert str(ckpt) in msg and "80 classes" in msg and "nc=2" in msg and "--new-head" in msg

    seen = {}

    def grab(trainer):
        seen.update({k: v.clone() for k, v in trainer.model.state_dict().items()})

    cfg = tiny_config(data, tmp_path, model=str(ckpt), new_head=True, val=False, save=False)
    trainer = Trainer(cfg, callbacks={"on_train_start": [grab]})
    trainer.fit()
    assert trainer.model.nc == 2 and trainer.model.names == ["defect", "scratch"]
    src = source.state_dict()
    assert torch.equal(seen["model.0.conv.weight"], src["model.0.conv.weight"])  # backbone kept
    assert torch.equal(seen["model.9.cv1.conv.weight"], src["model.9.cv1.conv.weight"])
    assert seen["model.22.cv3.0.2.weight"].shape[0] == 2  # class convs rebuilt for 2 classes


def test_unreadable_image_is_reported_by_path_and_the_run_continues(tmp_path, caplog):
    data = coco_pair(tmp_path)
    broken = data.parent / "images" / "train" / "broken.jpg"
    broken.write_bytes(b"this is not a JPEG")
    out = io.StringIO()
    reporter = Reporter(True, console=Console(file=out, width=300, force_terminal=False))
    result = Trainer(tiny_config(data, tmp_path, val=False, save=False), reporter=reporter).fit()  # reads no file
    assert result.epochs_run == 1
    lines = [ln for ln in out.getvalue().splitlines() if "broken.jpg" in ln]
    assert len(lines) == 1 and str(broken) in lines[0] and "the run continues without it" in lines[0]
    assert not [r for r in caplog.records if "broken.jpg" in r.getMessage()]  # once: not logged a second time


def test_unknown_model_name_is_one_sentence(tmp_path):
    data = coco_pair(tmp_path)
    with pytest.raises(FileNotFoundError, match="neither a model name") as info:
        Trainer(tiny_config(data, tmp_path, model="gelan-xl")).fit()
    _one_sentence(str(info.value))


def test_a_checkpoint_trains_at_its_own_size_unless_one_is_given(tmp_path):
    """No imgsz: a checkpoint trains at the size it records (a rectangular one at its longer side), the log says so,
    and the run's checkpoints and config keep it (a resume trains on at it); a fresh network at 640; an explicit size
    wins."""
    data = coco_pair(tmp_path)
    ckpt = save_checkpoint(build_model("gelan-t", nc=80), tmp_path / "start.pt", imgsz=[64, 96])  # h x w
    out = io.StringIO()
    reporter = Reporter(True, console=Console(file=out, width=300, force_terminal=False))
    cfg = tiny_config(data, tmp_path, model=str(ckpt), imgsz=None, val=False)
    result = Trainer(cfg, reporter=reporter).fit()
    side = 96
    assert f"imgsz {side}: the size it was trained at (64x96)" in out.getvalue()
    # and the run's one-line description, with the size it decided
    assert f"3 train images (no validation) at {side} px, batch 2, 1 epoch, on cpu; writing {tmp_path}" in out.getvalue()
    saved = read_checkpoint(result.last)  # the training state unpacked
    assert saved["meta"]["imgsz"] == side and saved["train"]["config"]["imgsz"] == side
    explicit = Trainer(tiny_config(data, tmp_path, model=str(ckpt), imgsz=128, val=False, name="given"))
    assert torch.load(explicit.fit().last, map_location="cpu", weights_only=True)["meta"]["imgsz"] == 128


def test_a_fresh_network_trains_at_640_without_a_size():
    from y9train.checkpoints.facts import training_size

    assert training_size(build_model("gelan-t", nc=80)) == (640, "the default")
