"""The rules that pick the frame pipeline (``runtime.frame_pipeline.choose_pipeline``) and the post-processing
(``y9core.post.choice.choose_post``), called with explicit facts for every row of their tables, and where the
choice is named: ``repr(Detector)``, ``Detector.choice()``, the benchmark JSON and the doctor report."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO
from y9core.post.choice import POST_RULE, PostFacts, PostImpl, choose_post
from y9deploy.pre.impl import PreImpl
from y9deploy.runtime.frame_pipeline import PIPELINE_RULE, PipelineImpl, choose_pipeline, default_choice

CUDA = dict(device="cuda:0", torch_tensors=True, triton=True)


@pytest.mark.parametrize(
    "kw,want",
    [
        (dict(device="cpu", option="auto", torch_cuda=True), PreImpl.HOST),  # CPU ORT on a GPU machine
        (dict(device="cpu", option="cpu", torch_cuda=False), PreImpl.HOST),
        (dict(device="cuda:0", option="auto", torch_cuda=False), PreImpl.HOST),  # no torch with CUDA
        (dict(device="cuda", option="hybrid", torch_cuda=False), PreImpl.HOST),
        (dict(device="cuda:1", option="auto", torch_cuda=True), PreImpl.HYBRID),
        (dict(device="cuda:0", option="hybrid", torch_cuda=True), PreImpl.HYBRID),
        (dict(device="cuda:0", option="gpu", torch_cuda=True), PreImpl.GPU),
        (dict(device="cuda:0", option="cpu", torch_cuda=True), PreImpl.CPU),
    ],
)
def test_choose_pipeline(kw, want):
    choice = choose_pipeline(**kw)
    assert choice.pre is want
    assert choice.pipeline is (PipelineImpl.HOST if want is PreImpl.HOST else PipelineImpl.TORCH)


def test_choose_pipeline_rejects():
    with pytest.raises(ValueError, match="preprocess='gpu' needs a CUDA backend.*the CPU"):
        choose_pipeline(device="cpu", option="gpu", torch_cuda=True)
    with pytest.raises(ValueError, match="a CUDA device without torch"):
        choose_pipeline(device="cuda:0", option="gpu", torch_cuda=False)
    with pytest.raises(ValueError, match="preprocess='fast'"):
        choose_pipeline(device="cpu", option="fast", torch_cuda=False)


def test_every_row_of_the_tables_decides_some_case():
    """Each row of each rule wins for some facts (a row that never wins would be a dead condition)."""
    pipelines = {choose_pipeline(device=d, option=o, torch_cuda=t)
                 for d in ("cpu", "cuda:0") for o in ("auto", "hybrid", "gpu", "cpu") for t in (False, True)
                 if o != "gpu" or (d == "cuda:0" and t)}  # fmt: skip
    assert pipelines == {c for _, _, c in PIPELINE_RULE}
    rows = set()
    for end2end, option, tensors, device, triton, graphs, multi in itertools.product(
        (False, True),
        ("auto", "gpu", "cpu"),
        (False, True),
        ("cpu", "cuda"),
        (False, True),
        (None, True, False),
        (False, True),
    ):
        facts = PostFacts(end2end, option, tensors, device == "cuda", triton, graphs, multi)
        impl = choose_post(device=device, end2end=end2end, option=option, torch_tensors=tensors, triton=triton,
                           graphs=graphs, multi_label=multi)  # fmt: skip
        row = next(r for r, (_, holds, _) in enumerate(POST_RULE) if holds(facts))
        assert POST_RULE[row][2] is impl
        rows.add(row)
    assert rows == set(range(len(POST_RULE)))


@pytest.mark.parametrize(
    "kw,want",
    [
        # rule 1: end-to-end, whatever else
        (dict(CUDA, end2end=True), PostImpl.END2END),
        (dict(device="cpu", end2end=True, torch_tensors=False, triton=False), PostImpl.END2END),
        (dict(CUDA, end2end=True, option="cpu", graphs=True), PostImpl.END2END),
        # rule 2: the host pipeline (CPU ORT; CUDA without torch), or option "cpu"
        (dict(device="cpu", end2end=False, torch_tensors=False, triton=True), PostImpl.HOST),
        (dict(device="cuda:0", end2end=False, torch_tensors=False, triton=True), PostImpl.HOST),
        (dict(CUDA, end2end=False, option="cpu"), PostImpl.HOST),
        (dict(CUDA, end2end=False, option="cpu", graphs=True), PostImpl.HOST),
        # rule 3: graphs required (on CPU tensors: the eager steps)
        (dict(device="cpu", end2end=False, torch_tensors=True, triton=False, graphs=True), PostImpl.GRAPH),
        # rule 4: automatic graphs on CUDA with triton
        (dict(CUDA, end2end=False), PostImpl.GRAPH),
        (dict(CUDA, end2end=False, option="gpu"), PostImpl.GRAPH),
        # rule 5: no graphs: the Triton scan on CUDA
        (dict(CUDA, end2end=False, graphs=False), PostImpl.TORCH_TRITON),
        # CPU tensors (training's validation on the CPU, a .pt Detector there): the host one, the faster there
        (dict(device="cpu", end2end=False, torch_tensors=True, triton=True), PostImpl.HOST),
        (dict(device="cpu", end2end=False, torch_tensors=True, triton=False, graphs=False), PostImpl.HOST),
        # the last rule: CUDA tensors without triton; CPU tensors when the GPU implementation is asked for
        (dict(CUDA, end2end=False, triton=False), PostImpl.TORCH),
        (dict(device="cpu", end2end=False, option="gpu", torch_tensors=True, triton=False), PostImpl.TORCH),
        # multi-label candidates: only the host implementation has them
        (dict(CUDA, end2end=False, multi_label=True), PostImpl.HOST),
    ],
)
def test_choose_post(kw, want):
    assert choose_post(**kw) is want


def test_choose_post_rejects_an_unknown_option():
    with pytest.raises(ValueError, match="postprocess='fast'"):
        choose_post(device="cpu", end2end=False, option="fast", torch_tensors=False, triton=False)


def test_a_recorded_failure_is_skipped_from_then_on():
    """In a fresh process (the record is process-wide): one warning per implementation, the next one down
    returned, and the rule skips what failed."""
    code = (
        "import warnings\n"
        "from y9core.post.choice import PostImpl, choose_post, failure, record_failure\n"
        "kw = dict(device='cuda', end2end=False, torch_tensors=True, triton=True)\n"
        "assert choose_post(**kw) is PostImpl.GRAPH and failure(PostImpl.GRAPH) is None\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    record_failure(PostImpl.GRAPH, RuntimeError('no ptxas'))\n"
        "    record_failure(PostImpl.GRAPH, RuntimeError('again'))\n"
        "assert len(w) == 1 and 'no ptxas' in str(w[0].message), [str(x.message) for x in w]\n"
        "assert failure(PostImpl.GRAPH) == 'RuntimeError: no ptxas'\n"
        "assert choose_post(**kw) is PostImpl.TORCH_TRITON\n"
        "assert choose_post(**kw, graphs=True) is PostImpl.GRAPH  # required: not skipped\n"
        "record_failure(PostImpl.TORCH_TRITON, RuntimeError('x'))\n"
        "assert choose_post(**kw) is PostImpl.TORCH\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_default_choice_for_the_doctor():
    assert default_choice(torch_cuda=False, triton=False) == ("cpu", "host", "host")
    assert default_choice(torch_cuda=False, triton=True) == ("cpu", "host", "host")
    assert default_choice(torch_cuda=True, triton=False) == ("cuda", "hybrid", "torch")
    assert default_choice(torch_cuda=True, triton=True) == ("cuda", "hybrid", "graph")


def test_doctor_report_names_the_choice():
    from y9core.post.choice import probe
    from y9deploy.measure.doctor import diagnose, report_dict

    report = diagnose()
    facts = probe()
    want = default_choice(torch_cuda=report.torch_sees_gpu, triton=report.triton is not None)
    assert (report.device, report.preprocess, report.postprocess) == want
    if not facts.torch_cuda:
        assert want == ("cpu", "host", "host")
    d = report_dict(report)
    assert d["preprocess"] == report.preprocess and d["postprocess"] == report.postprocess


def test_detector_names_its_choice(embedded_pt):
    """repr, choice() and the benchmark JSON name what runs: the host pipeline on the CPU, and the torch
    pipeline set explicitly on CPU tensors (its post-processing by the rule: host, the faster on the CPU)."""
    pytest.importorskip("torch")
    from y9deploy import Detector
    from y9deploy.measure.bench import BenchmarkResult, benchmark, synthetic_frame
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    frame = synthetic_frame(90, 160)
    with Detector(embedded_pt, imgsz=128, device="cpu") as det:
        assert det.choice() == {"pipeline": "host", "preprocess": "host", "postprocess": "host"}
        assert "pipeline=host, preprocess=host, postprocess=host" in repr(det)
        host = det.predict(frame, conf=0.01)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", pre="cpu", workers=1)
        assert det.choice() == {"pipeline": "torch", "preprocess": "cpu", "postprocess": "host"}
        assert "pipeline=torch, preprocess=cpu, postprocess=host" in repr(det)
        got = det.predict(frame, conf=0.01)
        np.testing.assert_array_equal(got.xyxy, host.xyxy)
        det.pipeline = GpuPipeline(det.backend, det.info, device="cpu", post="cpu", workers=1)
        assert det.choice() == {"pipeline": "torch", "preprocess": "hybrid", "postprocess": "host"}
        with pytest.raises(TypeError, match="expected an object with run, run_stream"):
            det.pipeline = object()
    res = benchmark(embedded_pt, iters=1, warmup=0, frames=[frame], device="cpu", imgsz=128)
    case = res.cases[0]
    assert (case.pipeline, case.pre_impl, case.post_impl, case.preprocess) == ("host", "host", "host", "cpu")
    back = BenchmarkResult.from_dict(res.to_dict())
    assert back.cases[0].post_impl == "host"


def test_post_runner_gives_numpy_outputs_to_the_host_implementation():
    """The fallback rule for work an implementation cannot take: a runner chosen for CUDA tensors (the torch
    implementation where triton is missing) gets numpy outputs (a backend that returned arrays) or CPU tensors and
    hands them to the implementation the rule gives for them (the host one); both give the host's rows."""
    torch = pytest.importorskip("torch")
    from tests.deploy.test_postprocess import random_prediction
    from y9deploy.post.options import PredictOptions, resolve_options
    from y9deploy.post.runner import PostRunner
    from y9deploy.postprocess import postprocess

    pred = random_prediction(np.random.default_rng(4), 2, 3, 300, ties=True)
    opts = resolve_options(PredictOptions(), {"conf": 0.3}, nc=3, end2end=False)
    runner = PostRunner(nc=3, names=["a", "b", "c"], device="cuda:0", tensors=True)  # nothing runs on it here
    assert runner.impl is PostImpl.TORCH
    want = postprocess(pred, conf=0.3)
    assert sum(len(w) for w in want) > 5
    for outputs in ({"output0": pred}, {"output0": torch.from_numpy(pred)}):
        got = runner.submit(outputs, 2, opts).rows()
        for x, y in zip(got, want, strict=True):
            np.testing.assert_array_equal(x, y)
    assert runner.impl is PostImpl.TORCH  # work it could not take does not change the choice
