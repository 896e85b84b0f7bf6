"""``y9 benchmark --batch 1,8`` on a static-batch model (issue 44 item 10): one sentence saying how to get a model
that takes batches, and the getting-started guide says the same."""

from __future__ import annotations

from tests.conftest import REPO, y9_output
from tests.deploy.embedded import IMGSZ


def test_benchmark_of_a_static_batch_onnx_at_batch_8_says_how_to_time_batches(embedded_export):
    onnx = embedded_export(IMGSZ)
    res = y9_output("benchmark", onnx, "--batch", "1,8", "--iters", "1", "--warmup", "0", "--frame", "48x64")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: {onnx.name} has a static batch of 1 image, so it cannot be benchmarked at batch 8; expected --batch 1 "
        "(batch_sizes=(1,)), or a model made for batches: y9 export --dynamic-batch exports an ONNX that takes any "
        "batch."
    )
    ok = y9_output("benchmark", onnx, "--batch", "1", "--iters", "1", "--warmup", "0", "--frame", "48x64")
    assert ok.returncode == 0, ok.stderr
    guide = " ".join((REPO / "docs" / "getting-started.md").read_text().split())
    assert "`y9 benchmark --batch 1,8` refuses batch 8 in one sentence" in guide
    assert "`y9 benchmark` and `y9 predict --batch` feed it one frame" not in guide
