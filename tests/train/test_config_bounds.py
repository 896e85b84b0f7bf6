"""Model configuration files with numbers out of bounds (issue 57, item 4): each is one sentence naming the file, the
layer and the value, said before anything is built (no torch traceback, no gigabytes allocated)."""

from __future__ import annotations

import time

import pytest

from tests.conftest import shared_path, y9_output
from y9train.models.config import CONFIG_DIR, ConfigError, load_config

GELAN_T = (CONFIG_DIR / "gelan-t.yaml").read_text()
LAYER_1 = "  - {op: conv, out: 32, k: 3, s: 2}                         # 1  P2/4"
LAYER_4 = "  - {op: repncspelan, out: 64, mid: 64, branch: 32, depth: 3}    # 4"
LAYER_11 = "  - {op: concat, from: [-1, 6]}                             # 11"


def _edited(tmp_path, old: str, new: str):
    assert old in GELAN_T
    path = tmp_path / "cfg.yaml"
    path.write_text(GELAN_T.replace(old, new))
    return path


CASES = [
    (LAYER_1, "  - {op: conv, out: 2000000, k: 3, s: 2}", r"layer 1 \(conv\) has out: 2000000; expected an integer "
                                                         "from 1 to 8192"),
    (LAYER_1, "  - {op: conv, out: -16, k: 3, s: 2}", r"layer 1 \(conv\) has out: -16; expected an integer"),
    (LAYER_1, "  - {op: conv, out: sixteen, k: 3, s: 2}", r"layer 1 \(conv\) has out: 'sixteen'; expected an integer"),
    (LAYER_1, "  - {op: conv, out: 32, k: 0, s: 2}", r"layer 1 \(conv\) has k: 0; expected an integer from 1 to 11"),
    (LAYER_1, "  - {op: conv, out: 32, k: 3, s: 0}", r"layer 1 \(conv\) has s: 0; expected an integer from 1 to 8"),
    (LAYER_1, "  - {op: conv, out: 32, k: 3, s: true}", r"layer 1 \(conv\) has s: True; expected an integer"),
    (LAYER_4, "  - {op: repncspelan, out: 64, mid: 64, branch: 32, depth: 10000000}",
     r"layer 4 \(repncspelan\) has depth: 10000000; expected an integer from 1 to 16"),
    (LAYER_11, "  - {op: concat, from: [-1, six]}", r"layer 11 \(concat\) has from: \[-1, 'six'\]; expected a layer "
                                                    "index"),
    (LAYER_11, "  - {op: concat, from: [-1, 99]}", r"layer 11 \(concat\) has from: \[-1, 99\]; expected a layer index"),
    ("strides: [8, 16, 32]", "strides: [0, -1, x]", r"strides is \[0, -1, 'x'\]; expected increasing integers"),
    (LAYER_4, "  - {op: repncspelan, out: 8000, mid: 8000, branch: 8000, depth: 16}",
     r"layer 4 \(repncspelan\) brings the network to about [0-9,]+ parameters; expected at most 500,000,000"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "message"), CASES)
def test_a_number_out_of_bounds_is_one_sentence_naming_file_layer_and_value(tmp_path, old, new, message):
    path = _edited(tmp_path, old, new)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
        load_config(str(path))
    assert time.perf_counter() - t0 < 2


def test_train_with_such_a_config_exits_2_with_the_sentence(tmp_path):
    path = _edited(tmp_path, LAYER_1, "  - {op: conv, out: 2000000, k: 3, s: 2}")
    data = shared_path("datasets", "coco8", "data.yaml")
    res = y9_output("train", "--model", path, "--data", data, "--epochs", "1", "--device", "cpu",
                    "--project", tmp_path / "runs")  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("error:") == 1 and "Traceback" not in res.stderr
    assert f"error: {path}: layer 1 (conv) has out: 2000000; expected" in " ".join(res.stderr.split())


def test_every_official_config_is_within_the_bounds():
    from y9train.models.config import MODEL_NAMES

    for name in MODEL_NAMES:
        assert load_config(name)["layers"]
