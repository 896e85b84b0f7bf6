"""Schemas of what y9 reads (issue 34, item 7): engine manifests, ONNX metadata and checkpoint entries are checked by
type and range, each failure one sentence naming the file; names count equals the class count in every artifact;
weights must be floating point; a last.pt's optimizer state must fit before a resume; `build-engine` takes only a y9
detector; `y9 info` separates what it checked from what a manifest only claims."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.deploy.tiny_onnx import tiny_onnx
from y9core.errors import ModelFileError
from y9deploy.engine.manifest import manifest_path

NAMES = ["a", "b", "c"]


def _cli(args, capsys) -> tuple[int, str, str]:
    from y9cli.app import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine

    root = tmp_path_factory.mktemp("schema")
    onnx_path = tiny_onnx(root / "m.onnx", metadata={"names": json.dumps(NAMES), "model": "tiny"})
    return build_engine(onnx_path, root / "m.engine", batch="1:2:4", target="sm89"), onnx_path


@pytest.fixture
def engine(built, tmp_path):
    src, onnx_path = built
    for p in (src, manifest_path(src), onnx_path):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path / src.name


def _edit(engine, **changes) -> dict:
    path = manifest_path(engine)
    data = json.loads(path.read_text())
    for key, value in changes.items():
        target, _, sub = key.partition("__")
        if sub:
            data[target][sub] = value
        else:
            data[target] = value
    path.write_text(json.dumps(data))
    return data


@pytest.mark.parametrize(
    "changes, entry",
    [
        ({"inputs": "images"}, "'inputs'"),
        ({"outputs": [["output0", [1, 7, 96], "float32"]]}, "'outputs[0]'"),
        ({"onnx_metadata": [["names", "[]"]]}, "'onnx_metadata'"),
        ({"batch": "1:2:4"}, "'batch'"),
        ({"engine_bytes": -5}, "'engine_bytes'"),
        ({"compute_capability": 89}, "'compute_capability'"),
        ({"facts": {"imgsz": "big", "names": NAMES}}, "'imgsz'"),
    ],
)
def test_a_manifest_entry_of_the_wrong_type_is_one_sentence_in_info_and_triton(engine, tmp_path, capsys, changes,
                                                                                 entry):  # fmt: skip
    _edit(engine, **changes)
    for args in (["info", engine], ["triton", engine, "-o", tmp_path / "repo"]):
        code, _, err = _cli(args, capsys)
        assert code == 2
        _one_error(err, str(manifest_path(engine)), entry)
    assert not (tmp_path / "repo").exists()


def test_a_manifest_that_is_not_json_names_the_file(engine, capsys):
    manifest_path(engine).write_text("{not json")
    code, _, err = _cli(["info", engine], capsys)
    assert code == 2
    _one_error(err, f"{manifest_path(engine)} is not valid JSON")


def test_info_says_what_it_checked_and_what_the_manifest_only_claims(engine, capsys):
    code, out, _ = _cli(["info", engine, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["facts"]["names"] == NAMES
    assert any("sha256" in c for c in report["checked"]) and any("m.onnx" in c for c in report["checked"])
    assert any("batch 1:2:4" in c and "only tensorrt_rtx" in c for c in report["claimed"])


def test_lies_the_manifest_cannot_back_up_are_refused(engine, capsys):
    data = json.loads(manifest_path(engine).read_text())
    _edit(engine, batch=[1, 2, 8])  # the profile still says 4
    _one_error(_cli(["info", engine], capsys)[2], "'batch'", "the profile's batches [1, 2, 4]")
    manifest_path(engine).write_text(json.dumps(data))
    _edit(engine, facts__names=["x", "y", "z"])  # the ONNX it was built from, beside it, says a, b, c
    _one_error(_cli(["info", engine], capsys)[2], "differ from those of", "m.onnx", "names")
    manifest_path(engine).write_text(json.dumps(data))
    _edit(engine, facts__names=["x", "y"])  # two names for the three classes of its output
    _one_error(_cli(["info", engine], capsys)[2], "2 class names but the model outputs 3 classes")


def test_a_consistent_lie_without_the_onnx_is_shown_as_claimed(engine, capsys):
    _edit(engine, facts__names=["x", "y", "z"])
    engine.with_name("m.onnx").unlink()
    code, out, _ = _cli(["info", engine, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["facts"]["names"] == ["x", "y", "z"]
    assert not any("m.onnx" in c for c in report["checked"]) and any("facts" in c for c in report["claimed"])


def test_build_engine_refuses_an_onnx_that_is_not_a_detector(tmp_path, capsys):
    from tests.reliability.test_model_file_faults import _classifier

    path = _classifier(tmp_path / "classifier.onnx")
    code, _, err = _cli(["build-engine", path, "--target", "sm89"], capsys)
    assert code == 2 and not path.with_suffix(".engine").exists()
    # the file carries y9's metadata without its digest: that warning may come first (issue 57), then one error
    errors = "\n".join(line for line in err.strip().splitlines() if not line.startswith("warning: "))
    _one_error(errors, str(path), "classifier.onnx is not a y9 detector", "expected one output [B, 4 + classes, anchors]")


def test_a_checkpoint_with_integer_weights_is_refused(tmp_path):
    from y9deploy import Detector
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.load import checkpoint_payload, write_payload
    from y9train.models import build_model

    path = tmp_path / "int32.pt"
    payload = checkpoint_payload(build_model("gelan-t", nc=3, names=NAMES), path)
    key = next(k for k, v in payload["model"].items() if v.ndim == 4)
    payload["model"][key] = payload["model"][key].round().to(torch.int32)  # what a careless conversion leaves
    write_payload(payload, path)
    for load in (load_checkpoint, lambda p: Detector(p, device="cpu")):
        with pytest.raises(ModelFileError) as err:
            load(path)
        text = str(err.value)
        assert str(path) in text and "is int32; expected floating-point weights" in text and "\n" not in text


def test_model_facts_in_a_checkpoint_are_checked(tmp_path):
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    model = build_model("gelan-t", nc=3, names=NAMES)
    good = {"format": "y9-model-facts/1", "imgsz": [64, 64], "names": NAMES, "strides": [8, 16, 32]}
    assert load_checkpoint(save_checkpoint(model, tmp_path / "ok.pt", facts=good)) is not None
    for facts, needle in (({**good, "imgsz": [64]}, "'imgsz' is [64]"), ({**good, "names": ["a"]}, "1 class names"),
                          ({**good, "precision": "int4"}, "'precision' is 'int4'")):  # fmt: skip
        path = save_checkpoint(model, tmp_path / "bad.pt", facts=facts)
        with pytest.raises(ModelFileError) as err:
            load_checkpoint(path)
        assert str(path) in str(err.value) and needle in str(err.value), err.value


def test_a_last_pt_whose_optimizer_state_does_not_fit_is_refused_before_the_resume(tmp_path):
    from tests.train.trainer_fixtures import coco_pair, tiny_config
    from y9train.checkpoints.load import read_checkpoint, write_payload
    from y9train.loop.trainer import Trainer

    torch.set_num_threads(1)
    run = Trainer(tiny_config(coco_pair(tmp_path), tmp_path, epochs=1, imgsz=64, val=False)).fit()
    from y9deploy.facts import read_facts

    facts = read_facts(run.last)  # training wrote the record
    assert facts.imgsz == (64, 64) and facts.model == "gelan-t" and facts.recipe.startswith("default + ")
    payload = read_checkpoint(run.last)
    assert payload["meta"]["facts"]["names"] == list(facts.names)
    state = payload["train"]["optimizer"]["state"]
    index = next(i for i, entry in state.items() if any(t.ndim > 1 for t in entry.values()))
    name = next(n for n, t in state[index].items() if t.ndim > 1)
    state[index][name] = state[index][name][:1]  # one output channel of a conv's moments
    write_payload(payload, run.last)
    resumed = Trainer.from_checkpoint(run.last, {"epochs": 2})
    with pytest.raises(ModelFileError) as err:
        resumed.fit()
    text = str(err.value)
    assert str(run.last) in text and f"'{name}' of parameter {index} has shape" in text and "\n" not in text
    assert resumed.start_epoch == 0  # nothing was restored, nothing trained


@pytest.mark.parametrize("metadata", [{"names": "{{{"}, {"imgsz": "[64, 96"}, {"names": json.dumps(["a"] * 2), "stride": "x"}])
def test_info_does_not_call_an_unreadable_onnx_metadata_checked(engine, capsys, metadata):
    _edit(engine, onnx_metadata=metadata)
    code, out, _ = _cli(["info", engine, "--json"], capsys)
    report = json.loads(out)
    assert code == 0
    entries = next(c for c in report["checked"] if c.startswith("manifest entries"))
    assert entries.endswith("except its unreadable 'onnx_metadata'"), entries
    assert any(c.startswith("onnx_metadata: NOT checked, it cannot be read (metadata entry") for c in report["claimed"])
