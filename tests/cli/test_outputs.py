"""Commands that write one file or one model folder refuse to write over their input or over an earlier output
(unless --exist-ok), in one `error:` line, leaving the input byte-identical; run folders of val and triton are new
numbered folders by default."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import run_y9
from tests.deploy.fixed_onnx import fixed_boxes_onnx


@pytest.fixture
def checkpoint(tmp_path):
    from y9deploy.default_model import default_model_path

    return shutil.copy(default_model_path(), tmp_path / "a.pt")


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_reparam_onto_its_input_is_refused(checkpoint, capsys):
    before = checkpoint.read_bytes()
    assert run_y9(["reparam", checkpoint, checkpoint]) == 2
    assert _one_error(capsys) == (
        f"error: output checkpoint {checkpoint} is the input {checkpoint}; writing there would overwrite it. "
        "Expected another path."
    )
    assert checkpoint.read_bytes() == before


def test_export_onto_its_input_or_an_earlier_onnx_is_refused(checkpoint, tmp_path, capsys):
    before = checkpoint.read_bytes()
    assert run_y9(["export", checkpoint, "-o", checkpoint]) == 2
    assert "ends in '.pt', but the export writes an ONNX model" in _one_error(capsys)  # an ONNX is never a .pt
    assert checkpoint.read_bytes() == before
    onnx_path = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    onnx_before = onnx_path.read_bytes()
    assert run_y9(["export", onnx_path, "--half", "-o", onnx_path]) == 2
    assert "is the input" in _one_error(capsys)
    assert onnx_path.read_bytes() == onnx_before
    (tmp_path / "a.onnx").write_bytes(b"earlier export")
    assert run_y9(["export", checkpoint]) == 2  # default output: a.onnx beside the checkpoint, which exists
    assert _one_error(capsys) == (
        f"error: output ONNX file {tmp_path / 'a.onnx'} already exists (a file of an earlier run); expected a new "
        "name: choose another, or add --exist-ok to replace it."
    )
    assert (tmp_path / "a.onnx").read_bytes() == b"earlier export"


def test_build_engine_onto_its_onnx_or_an_earlier_engine_is_refused(tmp_path, capsys):
    onnx_path = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    before = onnx_path.read_bytes()
    assert run_y9(["build-engine", onnx_path, "-o", onnx_path]) == 2
    assert "is the input" in _one_error(capsys)
    (tmp_path / "m.engine.json").write_text("{}")  # an earlier build's manifest
    assert run_y9(["build-engine", onnx_path]) == 2
    assert _one_error(capsys).startswith(f"error: engine manifest {tmp_path / 'm.engine.json'} already exists")
    assert onnx_path.read_bytes() == before


def test_triton_writes_a_new_numbered_repository_and_refuses_an_existing_model_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    onnx_path = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    for repo in ("triton", "triton2"):
        assert run_y9(["triton", onnx_path]) == 0
        assert (tmp_path / "runs" / repo / "m" / "config.pbtxt").exists()
    capsys.readouterr()
    assert run_y9(["triton", onnx_path, "-o", "runs/triton"]) == 2
    assert "runs/triton/m already exists" in _one_error(capsys)
    assert run_y9(["triton", onnx_path, "--out", "runs/triton", "--overwrite"]) == 0  # the old names still work
    err = capsys.readouterr().err
    assert "--out is deprecated" in err and "--overwrite is deprecated" in err


def test_val_into_a_named_folder_with_results_is_refused_before_any_work(tmp_path, capsys):
    (tmp_path / "runs" / "v").mkdir(parents=True)
    (tmp_path / "runs" / "v" / "metrics.json").write_text("{}")
    code = run_y9(["val", "--data", tmp_path / "missing.yaml", "--model", tmp_path / "missing.onnx",
                   "--project", tmp_path / "runs", "--name", "v"])  # fmt: skip
    assert code == 2
    assert "runs/v (--name) already holds 1 file: metrics.json of an earlier run" in _one_error(capsys)


def test_convert_into_a_folder_with_files_or_inside_its_source_is_refused(tmp_path, capsys):
    src = tmp_path / "vd"
    (src / "images").mkdir(parents=True)
    (src / "annotations").mkdir()
    assert run_y9(["convert", "visdrone", src, src / "yolo"]) == 2
    assert "is inside the input folder" in _one_error(capsys)
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "data.yaml").write_text("names: [a]\n")
    assert run_y9(["convert", "visdrone", src, tmp_path / "dst"]) == 2
    assert "(DST) already holds 1 file: data.yaml" in _one_error(capsys)
    assert not (src / "yolo").exists()


def test_benchmark_json_over_the_baseline_it_compares_with_is_refused(tmp_path, capsys):
    onnx_path = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    fast = ["--iters", "1", "--warmup", "0", "--frame", "64x64"]
    assert run_y9(["benchmark", onnx_path, *fast, "--json", tmp_path / "b.json"]) == 0
    baseline = (tmp_path / "b.json").read_bytes()
    capsys.readouterr()
    assert run_y9(["benchmark", onnx_path, *fast, "--json", tmp_path / "b.json", "--compare", tmp_path / "b.json"]) == 2
    assert "--json file" in _one_error(capsys) and (tmp_path / "b.json").read_bytes() == baseline
