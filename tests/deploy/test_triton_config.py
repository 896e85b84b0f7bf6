"""``config.pbtxt`` is Triton's own ``ModelConfig`` message (issue 35 item 6): the files equal, as parsed protobuf
messages, those the string templates wrote before (kept in tests/deploy/triton_templates.py as the reference), for
ONNX models (dynamic and static batch, every instance kind, names that need escaping) and an engine built ahead of
time for sm89."""

from __future__ import annotations

import json

import pytest

from tests.deploy.fixed_onnx import fixed_boxes_onnx
from tests.deploy.runtime_support import export_tiny_onnx
from tests.deploy.triton_templates import old_preferred, render_config
from y9deploy.serving.triton_repo import describe_model, write_triton_repo

model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
text_format = pytest.importorskip("google.protobuf.text_format")


def parse(text: str):
    return text_format.Parse(text, model_config_pb2.ModelConfig())


def check_against_templates(model, repo_root, **options):
    """Write the repository, then compare its config.pbtxt with the old template's text for the same facts."""
    repo = write_triton_repo(model, repo_root, **options)
    served = describe_model(model)
    kind = options.get("kind", "auto")
    kind = "gpu" if served.platform == "tensorrt_plan" and kind == "auto" else kind
    before = render_config(served, repo.name, max_batch_size=repo.max_batch_size, kind=kind,
                           preferred=old_preferred(served, repo.max_batch_size), instances=repo.instances)  # fmt: skip
    written = repo.config_path.read_text(encoding="utf-8")
    assert written == repo.config_text
    new, old = parse(written), parse(before)
    assert new == old, f"new:\n{written}\nold:\n{before}"
    assert new.ListFields()  # a real message, not an empty one
    return new


def test_onnx_configs_equal_the_templates(tmp_path):
    dyn = export_tiny_onnx(tmp_path / "dyn.onnx", imgsz=(96, 128), dynamic_batch=True)
    for i, options in enumerate(({}, {"max_batch": 4, "instances": 2, "kind": "cpu"}, {"kind": "gpu"})):
        cfg = check_against_templates(dyn, tmp_path / f"repo{i}", **options)
        assert cfg.max_batch_size == options.get("max_batch", 8)
    static = fixed_boxes_onnx(tmp_path / "static.onnx", [[10, 10, 4, 4]], ['a "quoted" name', "ünïcode\\"],
                              dynamic_batch=False)  # fmt: skip
    cfg = check_against_templates(static, tmp_path / "repo-static", name="static-model.v2")
    assert cfg.max_batch_size == 0 and not cfg.HasField("dynamic_batching")
    assert json.loads(cfg.parameters["y9_metadata"].string_value)["names"] == ['a "quoted" name', "ünïcode\\"]


def test_engine_config_equals_the_template(tmp_path):
    pytest.importorskip("tensorrt_rtx")
    from tests.deploy.tiny_onnx import tiny_onnx
    from y9deploy.engine.builder import build_engine

    src = tiny_onnx(tmp_path / "t.onnx", metadata={"names": json.dumps(["a", "b", "c"]), "model": "tiny"})
    engine = build_engine(src, tmp_path / "t.engine", batch="1:4:8", target="sm89")
    cfg = check_against_templates(engine, tmp_path / "repo", instances=3)
    assert cfg.platform == "tensorrt_plan" and list(cfg.dynamic_batching.preferred_batch_size) == [4, 8]
    cfg = check_against_templates(engine, tmp_path / "repo2", max_batch=2)
    assert list(cfg.dynamic_batching.preferred_batch_size) == [2]
