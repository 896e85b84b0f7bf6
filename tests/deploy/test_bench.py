"""benchmark(): per-stage statistics, img/s, JSON round trip, regression comparison, idle gaps, the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.deploy.runtime_support import export_tiny_onnx
from y9deploy.measure.bench import (
    BenchmarkResult,
    StageStats,
    StageTimer,
    benchmark,
    compare,
    synthetic_frame,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


def test_stage_stats_match_numpy():
    samples = np.random.default_rng(0).exponential(2.0, 500)
    s = StageStats.of(samples)
    assert s.p50 == pytest.approx(np.percentile(samples, 50)) and s.p99 == pytest.approx(
        np.percentile(samples, 99)
    )
    assert s.p50 <= s.p90 <= s.p99 <= s.max and s.mean == pytest.approx(samples.mean())


def test_stage_timer_sums_stages():
    t = StageTimer()
    t.mark("start")
    time.sleep(0.002)
    t.mark("pre")
    time.sleep(0.004)
    t.mark("infer")
    t.mark("post")
    t.mark("start")  # a second chunk of the same call adds to the same stages
    time.sleep(0.002)
    t.mark("pre")
    t.mark("infer")
    t.mark("post")
    ms = t.stages_ms()
    assert (
        ms["pre"] >= 4.0 and ms["infer"] >= 4.0 and ms["post"] < 4.0
    )  # no sleep in post (slack for a busy CI box)


def test_stage_timer_pipelined_chunks():
    """A stream's next chunk starts (start, pre, infer) before the current one's times are read: it is counted
    with its own "post" in the next reading, not twice, and not lost by reset()."""
    t = StageTimer()
    t.mark("start")
    t.mark("pre")
    t.mark("infer")
    time.sleep(0.003)
    t.mark("post")  # chunk 0 done
    t.mark("start")
    time.sleep(0.006)
    t.mark("pre")  # chunk 1 in flight
    first = t.stages_ms()
    assert first["pre"] < 3.0 and first["post"] >= 3.0
    t.reset()
    t.mark("infer")
    t.mark("post")
    second = t.stages_ms()
    assert second["pre"] >= 6.0 and second["post"] < 3.0
    t.reset()
    assert t.stages_ms() == {"pre": 0.0, "infer": 0.0, "post": 0.0}


def test_benchmark_result(tiny):
    frames = [synthetic_frame(360, 640, seed=s) for s in range(2)]
    res = benchmark(tiny, batch_sizes=(1, 3), iters=8, warmup=1, frames=frames, conf=0.5)
    assert [c.batch for c in res.cases] == [1, 3]
    for c in res.cases:
        assert (c.model, c.backend, c.device, c.timer, c.frame_hw) == (
            "tiny.onnx",
            "onnxruntime",
            "cpu",
            "host",
            [360, 640],
        )
        for stage in ("pre", "infer", "post", "e2e"):
            s = c.stages[stage]
            assert 0 < s.p50 <= s.p90 <= s.p99 <= s.max
        # end to end covers the stages; img/s is images over the summed end-to-end time
        assert (
            c.stages["e2e"].mean
            >= c.stages["pre"].mean + c.stages["infer"].mean + c.stages["post"].mean - 1e-6
        )
        assert c.img_per_s == pytest.approx(c.batch * 1000.0 / c.stages["e2e"].mean, rel=1e-6)
        assert c.detections_per_image > 0
    assert res.machine["cpus"] >= 1 and "onnxruntime" in res.machine


def test_json_round_trip_and_compare(tiny, tmp_path):
    res = benchmark([tiny], batch_sizes=(2,), iters=4, warmup=0, frame_hw=(120, 160))
    path = res.save(tmp_path / "b.json")
    data = json.loads(path.read_text())
    assert set(data["cases"][0]["stages"]["e2e"]) == {"p50", "p90", "p99", "max", "mean"}
    again = BenchmarkResult.load(path)
    assert again.to_dict() == res.to_dict()
    lines = str(res).splitlines()  # print(result): a table, as y9 benchmark's, not the dataclass repr
    assert lines[0].split()[:3] == ["model", "(backend,", "device)"] and len(lines) == 1 + len(res.cases)
    case = res.cases[0]
    assert lines[1].split()[-7:] == [str(case.batch), *(f"{case.stages[k].p50:.2f}" for k in ("pre", "infer", "post",
                                     "e2e")), f"{case.stages['e2e'].p99:.2f}", f"{case.img_per_s:.1f}"]  # fmt: skip
    # an earlier run twice as fast end to end, with twice the throughput: a regression on those metrics
    old = json.loads(path.read_text())
    old["cases"][0]["stages"]["e2e"]["p50"] /= 2
    old["cases"][0]["img_per_s"] *= 2
    rows = {r.metric: r for r in compare(res, BenchmarkResult.from_dict(old))}
    assert rows["e2e.p50"].regression and rows["e2e.p50"].change == pytest.approx(1.0)
    assert rows["img_per_s"].regression and rows["img_per_s"].change == pytest.approx(-0.5)
    assert not rows["infer.p50"].regression and rows["infer.p50"].change == 0 and not rows["infer.p50"].notable
    assert rows["e2e.p50"].notable and rows["img_per_s"].notable
    better = {r.metric: r for r in compare(BenchmarkResult.from_dict(old), res)}  # the other way: faster, notable
    assert better["e2e.p50"].notable and not better["e2e.p50"].regression
    other = json.loads(path.read_text())
    other["cases"][0]["batch"] = 7
    assert compare(res, BenchmarkResult.from_dict(other)) == []  # no case in common
    (tmp_path / "junk.json").write_text("{}")
    with pytest.raises(ValueError, match="not a y9 benchmark JSON"):
        BenchmarkResult.load(tmp_path / "junk.json")


def test_idle_gap_spaces_the_calls(tiny):
    t0 = time.perf_counter()
    res = benchmark(tiny, iters=3, warmup=0, idle_ms=50, frame_hw=(64, 64))
    assert time.perf_counter() - t0 >= 0.15
    assert res.cases[0].idle_ms == 50 and res.cases[0].stages["e2e"].max < 1000


def test_bad_arguments(tiny):
    with pytest.raises(ValueError, match="batch_sizes"):
        benchmark(tiny, batch_sizes=(0,))
    with pytest.raises(ValueError, match="iters"):
        benchmark(tiny, iters=0)
    with pytest.raises(FileNotFoundError):
        benchmark(tiny.with_name("nope.onnx"))


def test_cli_benchmark_json_and_compare(tiny, tmp_path):
    from y9cli.app import app

    runner = CliRunner()
    out = tmp_path / "b.json"
    res = runner.invoke(app, ["benchmark", str(tiny), "--batch", "1", "--iters", "20", "--json", str(out),
                              "--frame", "240x320"])  # fmt: skip
    assert res.exit_code == 0, res.output
    case = json.loads(out.read_text())["cases"][0]
    assert case["iters"] == 20 and case["batch"] == 1 and case["stages"]["e2e"]["p50"] > 0
    assert "tiny.onnx" in res.output and "img/s" in res.output
    streamed = tmp_path / "s.json"
    res = runner.invoke(app, ["benchmark", str(tiny), "--batch", "2", "--iters", "4", "--stream", "--json",
                              str(streamed), "--frame", "240x320"])  # fmt: skip
    assert res.exit_code == 0, res.output
    case = json.loads(streamed.read_text())["cases"][0]
    assert case["mode"] == "stream" and case["iters"] == 4 and "stream" in res.output
    res = runner.invoke(app, ["benchmark", str(tiny), "--compile", "--iters", "1"])
    assert res.exit_code != 0 and "compile" in str(res.exception or res.output)  # an .onnx model: refused
    res = runner.invoke(app, ["benchmark", str(tiny), "--batch", "1,2", "--iters", "3", "--warmup", "0",
                              "--compare", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "e2e.p50" in res.output and "compared with" in res.output
    bad = runner.invoke(app, ["benchmark", str(tiny), "--batch", "1,x"])
    assert bad.exit_code != 0
