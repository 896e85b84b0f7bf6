"""Unbounded work (issue 34 "Why"): a YAML alias bomb, an oversized or recursive YAML file, a syntax error, a huge
label line and a rules polygon of too many points are each refused with one sentence of readable length naming the
file (and line), by the one YAML loader (y9core.files.yaml_load) every reader uses: data.yaml, hyperparameter files,
model configs, inspection rules and ``key=value`` overrides."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from tests.reliability.bounded_run import run_y9
from tests.train.data_fixtures import coco_pair_dataset
from y9core.data.labels import MAX_LABEL_LINE, parse_label_file
from y9core.data.yaml_config import load_data_yaml
from y9core.errors import ConfigFileError, DataError, RulesFileError
from y9core.files.yaml_load import MAX_YAML_ALIASES, MAX_YAML_BYTES, MAX_YAML_NODES, load_yaml_file
from y9deploy.pipelines.inspection.rules_file import load_rules
from y9deploy.tracking.regions import MAX_POLYGON_POINTS, Region
from y9train.models import build_model
from y9train.models.config import ConfigError
from y9train.optimisation.hyp import Hyp, read_hyp_yaml

READABLE = 400  # characters: the most any of these sentences may take


def billion_laughs(key: str = "names") -> str:
    """Nine levels of nine aliases: 387 million strings from under 1 kB."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for k in range(1, 9):
        lines.append(f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]")
    lines.append(f"{key}: *a8")
    return "\n".join(lines) + "\n"


def one_sentence(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text.endswith(".") and len(text) < READABLE, text
    return text


READERS = {
    "data.yaml": (lambda p: load_data_yaml(p), DataError),
    "hyperparameter file": (read_hyp_yaml, ConfigFileError),
    "model config": (lambda p: build_model(str(p)), ConfigError),
    "rules file": (load_rules, RulesFileError),
}


@pytest.mark.parametrize("reader", READERS)
def test_an_alias_bomb_is_refused_by_every_reader(tmp_path, reader):
    read, error = READERS[reader]
    path = tmp_path / ("rules.yaml" if reader == "rules file" else "x.yaml")
    path.write_text(billion_laughs())
    with pytest.raises(error) as info:
        read(path)
    text = one_sentence(info.value)
    # refused at the first level that expands past the limit (a5: 9**6 values), before anything is built
    assert f"{path}:6:5 expands to more than {MAX_YAML_NODES:,} values through its aliases" in text


@pytest.mark.parametrize(
    "text,words",
    [
        ("a: &x [1, *x]\n", "holds a recursive alias"),
        (
            "a: &x 1\nb: [" + ", ".join(["*x"] * (MAX_YAML_ALIASES + 1)) + "]\n",
            f"more than {MAX_YAML_ALIASES:,} aliases",
        ),
        ("names: [a, b\nnc: 2\n", ":2:3 is not valid YAML: did not find expected ',' or ']'"),
        ("names: {a: 1\n", "is not valid YAML"),
        ("x: " + "y" * (MAX_YAML_BYTES + 1), f"larger than {MAX_YAML_BYTES:,} bytes"),
        (
            "x: !!python/object/apply:os.system ['echo pwned']\n",
            "1:4 tags a list with !!python/object/apply:os.system; expected plain YAML values",
        ),
    ],
)
def test_hostile_yaml_is_one_readable_sentence_with_the_place(tmp_path, text, words):
    path = tmp_path / "data.yaml"
    path.write_text(text)
    with pytest.raises(DataError) as info:
        load_data_yaml(path)
    message = one_sentence(info.value)
    assert message.startswith(f"data.yaml {path}") and words in message, message


def test_the_alias_bomb_as_names_is_refused_by_data_check_in_bounded_memory(tmp_path):
    data = coco_pair_dataset(tmp_path / "d")
    raw = yaml.safe_load(data.read_text())
    raw.pop("nc")
    data.write_text(yaml.safe_dump(raw) + billion_laughs())
    run = run_y9(["data", "check", str(data)], tmp_path, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.errors == [f"error: data.yaml {data}:{len(yaml.safe_dump(raw).splitlines()) + 6}:5 expands to more than 200,000 values through "
                          "its aliases (*name), the most y9 builds from a YAML file (an alias bomb?); expected a "
                          "configuration file."], run.stderr  # fmt: skip
    assert run.peak_mb < 500, run.peak_mb


def test_legitimate_anchors_and_large_files_load(tmp_path):
    path = tmp_path / "ok.yaml"
    names = [f"class{i}" for i in range(5000)]
    path.write_text(
        yaml.safe_dump({"base": {"lr": 0.01}, "names": names}) + "a: &x {k: 1}\nb: *x\nc: {<<: *x}\n"
    )
    got = load_yaml_file(path, what="test")
    assert got["names"] == names and got["b"] == got["c"] == {"k": 1}


def test_a_huge_label_line_prints_a_short_error(tmp_path):
    label = tmp_path / "a.txt"
    label.write_text("0 " * 4_000_000 + "\n")  # one 8 MB line
    with pytest.raises(DataError) as info:
        parse_label_file(label, 80)
    message = one_sentence(info.value)
    assert message.startswith(f"Label file {label}:1 has a line of 8,000,000 characters ('0 0 0")
    assert f"(at most {MAX_LABEL_LINE:,} characters)" in message
    label.write_text("1 0.5 0.5 0.1 0.1 " + "x" * 500 + "\n")  # a long line under the limit: still short
    with pytest.raises(DataError, match=r"has 6 columns .*\.\.\. \(518 characters\)\); expected 5") as info:
        parse_label_file(label, 80)
    one_sentence(info.value)


def test_a_polygon_of_too_many_points_is_refused(tmp_path):
    ring = (
        np.stack([np.cos(t := np.linspace(0, 2 * np.pi, MAX_POLYGON_POINTS + 1)), np.sin(t)], 1) * 100 + 200
    )
    path = tmp_path / "rules.yaml"
    points = ", ".join(f"[{x:.2f}, {y:.2f}]" for x, y in ring)
    path.write_text(f"regions:\n  r: {{polygon: [{points}]}}\nrules:\n  - {{name: a, region: r, max: 0}}\n")
    with pytest.raises(RulesFileError) as info:
        load_rules(path)
    assert one_sentence(info.value) == (
        f"{path}:2: regions.r.polygon is {MAX_POLYGON_POINTS + 1:,} points; expected a list of 3 to "
        f"{MAX_POLYGON_POINTS:,} [x, y] points (simplify a longer outline)."
    )
    with pytest.raises(ValueError, match=f"expected 3 to {MAX_POLYGON_POINTS:,}"):
        Region("r", polygon=ring)
    assert len(Region("r", polygon=ring[:-1]).polygon) == MAX_POLYGON_POINTS
    big = tmp_path / "big.yaml"  # the 1M-point polygon of issue 34: refused by size before parsing
    big.write_text("regions:\n  r: {polygon: [" + "[1, 2], " * 1_000_000 + "[3, 4]]}\n")
    with pytest.raises(RulesFileError, match=f"larger than {MAX_YAML_BYTES:,} bytes"):
        load_rules(big)


def test_key_value_overrides_go_through_the_same_loader():
    assert Hyp.from_dict({"lr0": "0.02", "fliplr": "0.25"}) == Hyp(lr0=0.02, fliplr=0.25)
    for value in ("[" * 100_000, billion_laughs("x")):
        with pytest.raises(ValueError) as info:
            Hyp.from_dict({"lr0": value}, "override")
        assert one_sentence(info.value).startswith("override: lr0=") and "expected a number" in str(
            info.value
        )
