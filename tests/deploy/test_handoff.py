"""The hand-off proof: from the embedded model, with default options only, .pt -> ONNX -> FP16 ONNX -> engine (ahead
of time for sm89 with TensorRT-RTX: it cannot run here) -> Triton repository, every step through the `y9` command;
the ONNX has the input size the checkpoint records, `y9 val` of the .pt, the ONNX and the FP16 ONNX agree within
0.3 mAP50-95 points on the same images, and `y9 info` shows the same facts for every artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TEST_DATA, made_once, y9_output
from tests.deploy.embedded import embedded_model_path
from y9core.model_facts import ModelFacts

COCO8 = TEST_DATA / "coco8.yaml"
AGREE_POINTS = 0.3


def _y9(args: list[str]) -> str:
    res = y9_output(*args)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


@pytest.fixture(scope="session")
def chain(tmp_path_factory):
    """The README's deploy chain, run once per test run (shared by the xdist workers, ``made_once``: as a module
    fixture each worker running one of these tests built it again): {"pt", "onnx", "fp16", "engine", "repo"}
    paths."""
    pytest.importorskip("tensorrt_rtx")
    from y9cli.app import main

    names = {"onnx": "model.onnx", "fp16": "model-fp16.onnx", "engine": "model.engine", "repo": "triton-models"}

    def make(root: Path) -> None:
        paths = {"pt": embedded_model_path(), **{k: root / v for k, v in names.items()}}
        steps = [
            ["export", paths["pt"], "-o", paths["onnx"]],
            ["export", paths["onnx"], "--half", "-o", paths["fp16"]],
            ["build-engine", paths["fp16"], "-o", paths["engine"], "--target", "sm89"],
            ["triton", paths["engine"], "--out", paths["repo"]],
        ]
        for args in steps:
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                assert exc.code == 0, f"y9 {' '.join(map(str, args))} failed"

    root = made_once(tmp_path_factory, "handoff-chain", make)
    return {"pt": embedded_model_path(), **{k: root / v for k, v in names.items()}}


def test_default_export_has_the_trained_size_and_the_chain_carries_the_facts(chain):
    from y9deploy.facts import read_facts

    pt = read_facts(chain["pt"])
    assert pt.imgsz == (416, 416)  # what the embedded checkpoint records (MODEL_CARD.md), not the old default 640
    infos = {k: json.loads(_y9(["info", chain[k], "--json"])) for k in ("pt", "onnx", "fp16", "engine")}
    assert infos["onnx"]["details"]["input"]["shape"] == [1, 3, 416, 416]
    facts = {k: ModelFacts.from_dict(v["facts"], k) for k, v in infos.items()}
    for kind in ("onnx", "fp16", "engine"):
        assert facts[kind].differences(facts["pt"]) == [], kind  # the same model, carried along
    assert facts["pt"].source_sha256 == facts["engine"].source_sha256 and len(facts["pt"].source_sha256) == 64
    assert [facts[k].precision for k in ("pt", "onnx", "fp16", "engine")] == ["fp32", "fp32", "fp16", "fp16"]
    assert read_facts(chain["repo"] / "model").differences(pt) == []
    assert infos["engine"]["claimed"] and any("model-fp16.onnx" in c for c in infos["engine"]["checked"])


def test_val_of_pt_onnx_and_fp16_onnx_agree(chain):
    """`y9 val`'s two paths (the training-time loop for .pt, Detector for deployed files) with default options."""
    from y9.val import val_model

    results = {k: val_model(COCO8, chain[k], workers=2) for k in ("pt", "onnx", "fp16")}
    assert {r.imgsz for r in results.values()} == {(416, 416)}  # each at the trained size, and says so
    scores = {k: r.metrics["map50_95"] for k, r in results.items()}
    assert scores["pt"] > 0.5, scores  # the model finds its training images: a comparison that means something
    for kind in ("onnx", "fp16"):
        assert abs(100 * (scores[kind] - scores["pt"])) <= AGREE_POINTS, scores


def test_converting_an_onnx_refuses_options_it_cannot_apply(chain, tmp_path):
    """An ONNX source is converted as it is: an option that would change it (another opset, NMS thresholds of
    end2end exports) is refused in one sentence naming it, never silently ignored; nothing is written."""
    from y9deploy.export.onnx_export import export_onnx_report

    for option in ({"opset": 13}, {"conf": 0.5}, {"iou": 0.6}, {"max_det": 100}, {"imgsz": 320}):
        name, value = next(iter(option.items()))
        with pytest.raises(ValueError, match=f"{name}={value} cannot apply to .*model.onnx"):
            export_onnx_report(chain["onnx"], tmp_path / "out.onnx", half=True, **option)
    assert not (tmp_path / "out.onnx").exists()
