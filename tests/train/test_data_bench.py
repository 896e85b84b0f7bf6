"""``bench_loader`` / ``y9 bench-data`` count what they time (tiny settings; figures come from benchmarks/)."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from y9cli import data as data_cli
from y9train.data.bench import LoaderBenchResult, bench_loader


def test_bench_loader_counts_images_across_epochs(shared, tmp_path):
    data = shared("datasets", "coco8", "data.yaml")
    r = bench_loader(data, imgsz=128, batch=2, workers=0, batches=5, warmup=1, repeat=2, cache_dir=tmp_path)
    assert isinstance(r, LoaderBenchResult)
    assert (
        r.dataset_images == 8 and r.images == 10 and r.batches == 5
    )  # 6 batches of 2 over two 4-batch epochs
    assert r.images_per_s > 0 and r.seconds > 0 and r.cache == "ram" and r.mosaic


def test_cli_bench_data_json(shared, tmp_path):
    app = typer.Typer()
    data_cli.register(app)
    data = shared("datasets", "coco8", "data.yaml")
    args = ["bench-data", str(data), "--imgsz", "96", "--batch", "2", "--workers", "0", "--cache", "none"]
    args += ["--no-mosaic", "--batches", "2", "--warmup", "0", "--cache-dir", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["images"] == 4 and out["cache"] == "none" and out["mosaic"] is False and out["imgsz"] == 96
