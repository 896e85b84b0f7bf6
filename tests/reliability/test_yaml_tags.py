"""A ``!!python/...`` tag (or any tag outside plain YAML) on a single value, a list or a mapping, in every YAML file
y9 reads: one sentence naming the file, the line, the tag and the value; nothing is built from it (issue 46)."""

from __future__ import annotations

import pytest

from y9core.errors import Y9Error

TAGGED = {
    "on a single value": ("max: !!python/object/apply:os.system ['echo pwned']\n", "tags a list with "
                          "!!python/object/apply:os.system"),
    "on a scalar": ("max: !!python/name:os.system\n", "tags the value '' with !!python/name:os.system"),
    "a custom tag": ("max: !thing 3\n", "tags the value '3' with !thing"),
    "on a mapping": ("max: !!python/object:collections.OrderedDict {a: 1}\n", "tags a mapping with "
                     "!!python/object:collections.OrderedDict"),
}  # fmt: skip


def _rules(tmp_path, line: str):
    from y9deploy.pipelines.inspection.rules_file import load_rules

    path = tmp_path / "rules.yaml"
    path.write_text("regions:\n  r: {polygon: [[0, 0], [10, 0], [10, 10]]}\nrules:\n  - name: a\n    " + line)
    return path, lambda: load_rules(path)


def _data(tmp_path, line: str):
    from y9core.data.yaml_config import load_data_yaml

    path = tmp_path / "data.yaml"
    path.write_text("path: .\ntrain: images\nval: images\nnames: [a]\n" + line)
    return path, lambda: load_data_yaml(path)


def _hyp(tmp_path, line: str):
    from y9train.optimisation.hyp import read_hyp_yaml

    path = tmp_path / "hyp.yaml"
    path.write_text("lr0: 0.01\n" + line)
    return path, lambda: read_hyp_yaml(path)


def _model_config(tmp_path, line: str):
    from y9train.models.config import load_config

    path = tmp_path / "model.yaml"
    path.write_text("nc: 80\n" + line)
    return path, lambda: load_config(path)


@pytest.mark.parametrize("reader", [_rules, _data, _hyp, _model_config])
@pytest.mark.parametrize("case", sorted(TAGGED))
def test_a_tagged_value_is_one_sentence_naming_the_file_and_the_tag(tmp_path, reader, case):
    line, words = TAGGED[case]
    where, read = reader(tmp_path, line)
    with pytest.raises(Y9Error) as info:
        read()
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    assert str(where) in message and words in message, message
    assert "y9 never builds objects from tags" in message, message


@pytest.mark.parametrize("case", sorted(TAGGED))
def test_a_tagged_override_stays_text_and_is_refused_as_a_value(case):
    from y9train.optimisation.hyp import TrainConfig, apply_overrides

    value = TAGGED[case][0].split(":", 1)[1].strip()
    with pytest.raises(ValueError, match=r"^override: lr0=.*; expected a number\.$"):
        apply_overrides(TrainConfig(), {"lr0": value})
