"""Absurd hyperparameters and training options (issue 13, "Why"): one sentence naming the key, the value and the
allowed range, whether they come from ``key=value`` overrides, a hyperparameter file or the dataclasses."""

from __future__ import annotations

import math
import re
from dataclasses import fields

import pytest

from tests.reliability.test_data_faults import one_sentence
from y9train.data import AugmentConfig
from y9train.data.augment import AUGMENT_RANGES
from y9train.optimisation.hyp import HYP_RANGES, Hyp, TrainConfig, apply_overrides, load_hyp, parse_overrides

ABSURD = [
    ("mosaic", "2", "[0, 1] (a probability)"),
    ("fliplr", "-0.5", "[0, 1] (a probability)"),
    ("hsv_h", "5", "[0, 1]"),
    ("mixup", "1.5", "[0, 1] (a probability)"),
    ("flipud", "2.5", "[0, 1]"),
    ("scale", "1", "[0, 1)"),
    ("degrees", "-10", "[0, 180]"),
    ("box", "-1", ">= 0 (loss gain)"),
    ("cls", "-0.5", ">= 0"),
    ("lr0", "0", "(0, 1]"),
    ("lr0", "3", "(0, 1]"),
    ("momentum", "1.0", "[0, 1)"),
    ("weight_decay", "-0.01", "[0, 1)"),
    ("warmup_epochs", "-1", ">= 0"),
    ("t_mult", "0.5", ">= 1"),
    ("label_smoothing", "1", "[0, 1)"),
]


@pytest.mark.parametrize(("key", "value", "allowed"), ABSURD)
def test_absurd_hyperparameters_are_refused_naming_key_value_and_range(tmp_path, key, value, allowed):
    with pytest.raises(ValueError) as info:  # the CLI's key=value overrides
        apply_overrides(TrainConfig(data="d.yaml"), parse_overrides([f"{key}={value}"]))
    msg = one_sentence(str(info.value))
    assert msg.startswith(f"hyperparameter {key}={float(value)!r}; expected a value ") and allowed in msg
    hyp_file = tmp_path / "hyp.yaml"  # a hyperparameter file
    hyp_file.write_text(f"{key}: {value}\n")
    with pytest.raises(ValueError, match=f"{key}=.*{re.escape(allowed)}"):
        load_hyp(hyp_file)


def test_range_edges_are_accepted_and_augmentation_config_is_checked_too():
    Hyp(mosaic=0.0, mixup=1.0, fliplr=1.0, flipud=0.0, hsv_h=1.0, scale=0.0, lr0=1.0, momentum=0.0, box=0.0)
    AugmentConfig(mosaic=1.0, copy_paste=1.0, degrees=180.0, max_aspect=1.0)
    with pytest.raises(ValueError, match=r"hyperparameter fliplr=nan; expected a value in \[0, 1\]"):
        Hyp(fliplr=math.nan)
    with pytest.raises(ValueError, match=r"augmentation setting mosaic=2; expected a value in \[0, 1\]"):
        AugmentConfig(mosaic=2)
    with pytest.raises(ValueError, match=r"augmentation setting min_area_ratio=1\.5"):
        AugmentConfig(min_area_ratio=1.5)
    with pytest.raises(ValueError, match=r"training option iou=1\.5; expected a value in \[0, 1\]"):
        apply_overrides(TrainConfig(data="d.yaml"), parse_overrides(["iou=1.5"]))
    with pytest.raises(ValueError, match=r"training option conf=-0\.1; expected a value in \[0, 1\]"):
        TrainConfig(conf=-0.1)


def test_every_numeric_hyperparameter_has_a_range_and_the_defaults_are_inside():
    numeric = {f.name for f in fields(Hyp) if str(f.type) in ("float", "int")}
    assert numeric - set(HYP_RANGES) == set(), "add the new hyperparameter to HYP_RANGES"
    assert {f.name for f in fields(AugmentConfig)} == set(AUGMENT_RANGES)
    for name, allowed in HYP_RANGES.items():
        assert allowed.contains(getattr(Hyp(), name)) and not allowed.contains(math.nan), name
