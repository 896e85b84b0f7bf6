"""Engines built without `y9 build-engine` (trtexec, a TensorRT script; no y9 manifest): built here directly with
TensorRT-RTX's Python API, ahead of time for sm89, from the embedded model's ONNX. A Detector takes their facts from
the ONNX (beside the engine, given with facts=, or the .facts.json sidecar `y9 export` writes), says once what it
cannot check before TensorRT deserializes the engine, and on this GPU-less machine refuses at the GPU check; the
`trtexec` twin `y9 build-engine` prints names the same shapes as the profile it built."""

from __future__ import annotations

import shutil

import pytest

from y9core.errors import EngineMismatchError, ModelFileError
from y9core.model_facts import FactsWarning
from y9deploy.engine.gpu import current_compute_capability

trt = pytest.importorskip("tensorrt_rtx")
PROFILE = {"min": [1, 3, 416, 416], "opt": [2, 3, 416, 416], "max": [4, 3, 416, 416]}

pytestmark = pytest.mark.skipif(current_compute_capability() is not None, reason="the GPU check needs a GPU-less box")


def build_directly(onnx_path, engine_path) -> None:
    """An engine the way a user's own script builds one: TensorRT-RTX's builder, no y9 code, no manifest."""
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse(onnx_path.read_bytes(), str(onnx_path)), [parser.get_error(i) for i in range(parser.num_errors)]
    config = builder.create_builder_config()
    config.num_compute_capabilities = 1
    config.set_compute_capability(trt.ComputeCapability.SM89, 0)
    profile = builder.create_optimization_profile()
    profile.set_shape("images", PROFILE["min"], PROFILE["opt"], PROFILE["max"])
    config.add_optimization_profile(profile)
    engine_path.write_bytes(bytes(builder.build_serialized_network(network, config)))


@pytest.fixture(scope="module")
def foreign(embedded_export, tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    onnx_path = embedded_export(dynamic_batch=True)
    engine = root / "model.trt"
    build_directly(onnx_path, engine)
    return engine, onnx_path


def _refused_at_the_gpu_check(engine, **kw) -> str:
    from y9deploy import Detector

    with pytest.warns(FactsWarning, match="no y9 manifest") as notes, pytest.raises(EngineMismatchError) as err:
        Detector(engine, **kw)
    assert len([n for n in notes if issubclass(n.category, FactsWarning)]) == 1  # said once
    text = str(err.value)
    assert "runs only on an NVIDIA GPU, and this machine has none" in text, text
    return text + " | " + str(notes[0].message)


def test_facts_from_the_onnx_beside_it(foreign, tmp_path):
    engine, onnx_path = foreign
    here = tmp_path / "model.trt"
    shutil.copy(engine, here)
    shutil.copy(onnx_path, tmp_path / "model.onnx")
    text = _refused_at_the_gpu_check(here)
    assert "model.onnx" in text and "80 classes, trained at 416x416" in text


def test_facts_given_with_an_option_or_from_the_sidecar(foreign, tmp_path):
    from y9deploy.runtime.backends.foreign_engine import sidecar_path

    engine, onnx_path = foreign
    text = _refused_at_the_gpu_check(engine, facts=onnx_path)  # nothing beside it: the ONNX given
    assert onnx_path.name in text
    alone = tmp_path / onnx_path.stem
    alone.mkdir()
    here = alone / f"{onnx_path.stem}.engine"
    shutil.copy(engine, here)
    shutil.copy(sidecar_path(onnx_path), alone)  # y9 export wrote it beside the ONNX
    assert ".facts.json" in _refused_at_the_gpu_check(here)


def test_without_facts_it_says_where_they_could_come_from(foreign, tmp_path):
    from y9deploy import Detector

    here = tmp_path / "lonely.engine"
    shutil.copy(foreign[0], here)
    with pytest.raises(ModelFileError, match=r"lonely\.engine has no y9 manifest .*lonely\.onnx .*facts=PATH"):
        Detector(here)


def test_info_shows_the_facts_as_claimed(foreign, tmp_path):
    from y9deploy.facts import inspect_facts, read_facts

    engine, onnx_path = foreign
    shutil.copy(engine, tmp_path / "model.trt")
    shutil.copy(onnx_path, tmp_path / "model.onnx")
    report = inspect_facts(tmp_path / "model.trt")
    assert report.facts.differences(read_facts(onnx_path)) == [] and report.checked == ()
    assert any("unknown until TensorRT deserializes it" in c for c in report.claimed)


def test_build_engine_prints_its_trtexec_twin(foreign, tmp_path, capsys):
    from y9cli.app import main
    from y9deploy.engine.manifest import read_manifest
    from y9deploy.engine.trtexec import parse_shapes

    engine = tmp_path / "y9.engine"
    with pytest.raises(SystemExit) as done:
        main(["build-engine", str(foreign[1]), "-o", str(engine), "--batch", "1:2:4", "--target", "sm89",
              "--workspace", "2"])  # fmt: skip
    assert done.value.code == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "trtexec --onnx=" in x)
    twin = line[line.index("trtexec --onnx="):]
    assert parse_shapes(twin) == PROFILE == read_manifest(engine).profile["images"]
    assert f"--onnx={foreign[1]}" in twin and "--fp16" in twin and "--memPoolSize=workspace:2048M" in twin
