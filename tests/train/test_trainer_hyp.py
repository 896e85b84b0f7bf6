"""Hyperparameters from YAML plus overrides, the --resume [PATH] split, and the results plot."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from y9train.optimisation.hyp import (
    DEFAULT_HYP_PATH,
    Hyp,
    TrainConfig,
    apply_overrides,
    load_hyp,
    parse_overrides,
)
from y9train.reports.plots import PANELS, plot_results
from y9train.reports.reporting import write_results_csv
from y9train.run.args import split_resume_path
from y9train.run.train import build_config


def test_default_yaml_equals_the_dataclass_defaults():
    raw = yaml.safe_load(DEFAULT_HYP_PATH.read_text())
    assert set(raw) == {f.name for f in dataclasses.fields(Hyp)}
    assert load_hyp(DEFAULT_HYP_PATH) == Hyp()


def test_precedence_defaults_file_options_overrides(tmp_path):
    hyp_file = tmp_path / "hyp.yaml"
    hyp_file.write_text("lr0: 0.02\nmosaic: 0.5\nschedule: cosine\n")
    cfg = build_config(data="d.yaml", model="gelan-t", hyp_file=hyp_file, epochs=7, batch=None,
                       overrides=["mosaic=0", "label_smoothing_decay=true", "device=0", "cache=none", "epochs=9"])  # fmt: skip
    assert cfg.hyp.lr0 == 0.02 and cfg.hyp.schedule == "cosine"  # from the file
    assert cfg.hyp.mosaic == 0.0 and cfg.hyp.label_smoothing_decay is True  # override beats the file
    assert cfg.epochs == 9 and cfg.batch == TrainConfig().batch  # override beats the option; None = default
    assert cfg.device == "0" and cfg.cache is None
    assert cfg.hyp.momentum == Hyp().momentum  # untouched keys keep their defaults
    # a stored config (checkpoint) round-trips through JSON-able dicts
    assert TrainConfig.from_dict(yaml.safe_load(yaml.safe_dump(cfg.to_dict()))) == cfg


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["lr=0.1"], "override: unknown key lr (did you mean lr0 or lrf?); expected hyperparameter names"),
        (["mosaik=0", "epoch=3"], "unknown keys epoch (did you mean epochs or epoch_end?), mosaik (did you mean mosaic?)"),
        (["epochs=ten"], "epochs='ten'; expected an integer"),
        (["mosaic=yes please"], "mosaic='yes please'; expected a number"),
        (["schedule=step"], "schedule='step'; expected one of linear, cosine, cosine_restarts"),
        (["label_smoothing=1.5"], "label_smoothing=1.5; expected a value in [0, 1)"),
        (["imgsz=100"], "imgsz=100; expected a multiple of 32"),
        (["lr0"], "not of the form key=value"),
    ],
)
def test_bad_overrides_are_one_sentence(items, message):
    with pytest.raises(ValueError) as info:
        apply_overrides(TrainConfig(data="d.yaml"), parse_overrides(items))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bad_hyp_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="hyperparameter file .*nope.yaml does not exist"):
        load_hyp(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr0: 0.01\nwarmup: 3\n")
    with pytest.raises(ValueError, match=r"unknown key warmup \(did you mean warmup_\w+"):
        load_hyp(bad)
    bad.write_text("lr0: 0.01\nmosaic: [1, 2\nfliplr: 0.5\n")
    with pytest.raises(ValueError, match=rf"hyperparameter file {bad}:3:7 is not valid YAML: .*expected ',' or ']'"):
        load_hyp(bad)


def test_resume_flag_takes_an_optional_path_from_the_arguments():
    assert split_resume_path(True, []) == ("auto", [])
    assert split_resume_path(True, ["runs/train/exp", "epochs=5"]) == ("runs/train/exp", ["epochs=5"])
    assert split_resume_path(False, ["epochs=5"]) == (None, ["epochs=5"])
    with pytest.raises(ValueError, match="one run folder"):
        split_resume_path(True, ["a", "b"])


def test_plot_draws_every_recorded_series(tmp_path):
    history = [
        {"epoch": e, "train/box": 3.0 / e, "train/cls": 2.0 / e, "train/dfl": 1.5 / e, "train/grad_norm": 50.0 / e,
         "lr": 0.01 * (1 - e / 10), "metrics/precision": 0.1 * e, "metrics/recall": 0.05 * e,
         "metrics/map50": 0.08 * e, "metrics/map50_95": 0.04 * e, "metrics/fitness": 0.044 * e}
        for e in range(1, 6)
    ]  # fmt: skip
    csv = tmp_path / "results.csv"
    write_results_csv(csv, history)
    fig = plot_results(csv)
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = fig.get_axes()
    assert len(axes) == len(PANELS)
    for ax, (key, _) in zip(axes, PANELS, strict=True):
        x, y = ax.get_lines()[0].get_data()
        source = "metrics/fitness" if key == "fitness" else key
        np.testing.assert_allclose(x, [r["epoch"] for r in history])
        np.testing.assert_allclose(y, [r[source] for r in history], rtol=1e-7)
