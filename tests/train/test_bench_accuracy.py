"""benchmarks/bench_accuracy.py, the accuracy benchmark the H200 runs go through: the split (every Nth image to the
evaluation list, nothing copied), which close-mosaic each trainer gets (its own default unless --close-mosaic names
one), and a whole y9 run on CPU (train, evaluate with y9's evaluator, result.json)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml

from y9train.data import YoloDataset, load_data_yaml
from y9train.optimisation.hyp import Hyp, load_hyp

ROOT = Path(__file__).resolve().parents[2]
COCO8 = ROOT / "tests" / "data"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "benchmarks" / "bench_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.fixture()
def split(tmp_path) -> Path:
    src = tmp_path / "src"
    (src / "images").mkdir(parents=True)
    (src / "labels").mkdir()
    for p in sorted(COCO8.glob("*.jpg")):
        shutil.copy(p, src / "images" / p.name)
        shutil.copy(p.with_suffix(".txt"), src / "labels" / p.with_suffix(".txt").name)
    names = yaml.safe_load((COCO8 / "coco8.yaml").read_text())["names"]
    (src / "data.yaml").write_text(yaml.safe_dump({"path": ".", "train": "images", "val": "images", "nc": 80,
                                                   "names": names}))  # fmt: skip
    return bench.make_split(src / "data.yaml", tmp_path / "split", every=4)


def test_split_sends_every_nth_sorted_image_to_eval_and_copies_nothing(split):
    images = sorted((split.parent.parent / "src" / "images").glob("*.jpg"))
    train = split.parent.joinpath("train.txt").read_text().split()
    evals = split.parent.joinpath("eval.txt").read_text().split()
    assert evals == [str(images[3].resolve()), str(images[7].resolve())]
    assert train == [str(p.resolve()) for i, p in enumerate(images) if i % 4 != 3]
    assert not list(split.parent.glob("*.jpg"))  # lists of the original files
    cfg = load_data_yaml(str(split), require=("train", "val"))
    assert len(YoloDataset.from_yaml(cfg, "val", augment=False, imgsz=64)) == 2
    assert len(YoloDataset.from_yaml(cfg, "train", augment=False, imgsz=64)) == 6


def test_another_part_holds_out_a_disjoint_set_and_a_wrong_part_is_refused(split, tmp_path):
    first = set(split.parent.joinpath("eval.txt").read_text().split())
    other = bench.make_split(split.parent.parent / "src" / "data.yaml", tmp_path / "split1", every=4, part=1)
    evals = other.parent.joinpath("eval.txt").read_text().split()
    train = other.parent.joinpath("train.txt").read_text().split()
    images = sorted((split.parent.parent / "src" / "images").glob("*.jpg"))
    assert evals == [str(images[1].resolve()), str(images[5].resolve())] and not first & set(evals)
    assert sorted(train + evals) == sorted(str(p.resolve()) for p in images)
    with pytest.raises(SystemExit, match="--every 4 --part 4"):
        bench.make_split(split.parent.parent / "src" / "data.yaml", tmp_path / "bad", every=4, part=4)


def _args(*extra: str):
    return bench.build_parser().parse_args(["run", "--data", "d/data.yaml", "--out", "r", *extra])


def test_each_trainer_keeps_its_own_close_mosaic_unless_one_is_given(tmp_path):
    args = _args()
    config, _ = bench.y9_config(args, tmp_path)
    assert config.hyp.close_mosaic == Hyp().close_mosaic  # y9: its recipe's value
    assert (
        bench.y9_config(_args("--hyp", "official"), tmp_path)[0].hyp.close_mosaic
        == load_hyp("official").close_mosaic
    )
    cmd = bench.official_command(args, tmp_path)
    assert cmd[cmd.index("--close-mosaic") + 1] == str(bench.OFFICIAL_CLOSE_MOSAIC)
    # Ultralytics: its own default
    assert "close_mosaic" not in bench.ultralytics_arguments(args, tmp_path)[1]

    given = _args("--close-mosaic", "3")
    assert bench.y9_config(given, tmp_path)[0].hyp.close_mosaic == 3
    cmd = bench.official_command(given, tmp_path)
    assert cmd[cmd.index("--close-mosaic") + 1] == "3"
    assert bench.ultralytics_arguments(given, tmp_path)[1]["close_mosaic"] == 3
    both = _args("--close-mosaic", "3", "--set", "close_mosaic=7")
    assert bench.y9_config(both, tmp_path)[0].hyp.close_mosaic == 7  # --set wins


def test_a_y9_run_trains_evaluates_and_writes_its_result(split, tmp_path):
    out = tmp_path / "run"  # plots=false: no pictures, this test reads none of them
    bench.main(["run", "--data", str(split), "--out", str(out), "--model", "gelan-t", "--epochs", "1",
                "--imgsz", "64", "--batch", "4", "--workers", "0", "--cache", "none", "--label", "cpu",
                "--set", "plots=false"])  # fmt: skip
    result = json.loads((out / "result.json").read_text())
    assert (result["trainer"], result["label"], result["train_images"]) == ("y9", "cpu", 6)
    assert (result["eval_images"], result["eval_targets"]) == (
        2,
        sum(
            len((COCO8 / Path(p).with_suffix(".txt").name).read_text().splitlines())
            for p in split.parent.joinpath("eval.txt").read_text().split()
        ),
    )
    assert 0.0 <= result["map50_95"] <= result["map50"] <= 1.0
    assert result["hyp"]["close_mosaic"] == Hyp().close_mosaic
    assert len(result["per_epoch_map50_95"]) == 1
    assert (out / "row.md").read_text().startswith("| split | y9 cpu | gelan-t | 0 |")


def test_score_epochs_scores_the_official_last_epochs_with_y9s_evaluator(split, tmp_path, shared):
    from y9train.checkpoint import load_checkpoint

    assert "--save-period" not in bench.official_command(_args(), tmp_path)
    cmd = bench.official_command(_args("--score-epochs", "2"), tmp_path)
    assert cmd[cmd.index("--save-period") + 1] == "1"

    real = shared("fixtures", "official", "real")
    files = {1: real / "yolov9-t-train-dual-final.pt", 2: real / "gelan-t-train-py-last-unstripped.pt"}
    weights = tmp_path / "weights"
    weights.mkdir()
    shutil.copy(files[1], weights / "epoch0.pt")  # not among the last two of three epochs
    for e, f in files.items():
        shutil.copy(f, weights / f"epoch{e}.pt")
    args = _args("--score-epochs", "2", "--epochs", "3", "--imgsz", "160", "--workers", "0")
    args.data = split
    scored = bench.score_epoch_checkpoints(args, weights)
    expected = {e + 1: bench.evaluate_module(load_checkpoint(f), split, 160, workers=0)["map50_95"]
                for e, f in files.items()}  # fmt: skip
    assert scored == expected  # the last two epochs, 1-based (these barely trained fixtures score 0 on coco8)
    assert not list(weights.glob("epoch*.pt"))


def test_compare_reads_final_and_late10_figures_of_both_trainers(tmp_path):
    from accuracy_report import run_figure  # benchmarks/, on the path once bench_accuracy is loaded

    y9 = {"trainer": "y9", "map50_95": 0.5, "per_epoch_map50_95": [0.0, 0.0] + [0.1 * i for i in range(10)]}
    # official --score-epochs: 1-based epochs as JSON string keys ("10" sorts before "9" as text)
    scored = {str(e): (0.9 if e <= 30 else 0.4) for e in range(25, 41)}
    official = {"trainer": "official", "map50_95": 0.4, "per_epoch_scored": scored}
    unscored = {"trainer": "official", "map50_95": 0.6}
    paths = {}
    for name, r in {"y9": y9, "official": official, "unscored": unscored}.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(r))
    assert run_figure(str(paths["y9"]), "late10") == pytest.approx(0.45)
    assert run_figure(str(paths["official"]), "late10") == pytest.approx(0.4)  # epochs 31-40
    assert run_figure(str(paths["unscored"]), "final") == 0.6
    with pytest.raises(SystemExit, match="unscored.json: has no 10 last epochs scored by y9's evaluator"):
        run_figure(str(paths["unscored"]), "late10")
    late16 = run_figure(str(paths["official"]), "late16")  # epochs 25-40
    assert late16 == pytest.approx((6 * 0.9 + 10 * 0.4) / 16)
    with pytest.raises(SystemExit, match=r"y9.json: has no 16 last epochs .*\(found 12\)"):
        run_figure(str(paths["y9"]), "late16")
    line = bench.compare_runs([str(paths["official"])], [str(paths["y9"])], "late10", 0.01)
    assert "B-A +0.0500" in line and line.endswith("-> undecided")  # one run each: no spread, no estimate
    official2 = dict(official, per_epoch_scored={k: v + 0.02 for k, v in scored.items()})
    paths["official2"] = tmp_path / "official2.json"
    paths["official2"].write_text(json.dumps(official2))
    two = [str(paths["official"]), str(paths["official2"])]
    line = bench.compare_runs(two, [str(paths["y9"])] * 2, "late10", 0.055)  # A 0.40, 0.42; B 0.45, 0.45
    # 0.04 + 2 * sqrt(0.0002 / n) <= 0.055 first holds at n = 4
    assert line.endswith("-> undecided (within 0.055 would take about 4 runs per trainer at these spreads)")
    line = bench.compare_runs(two, [str(paths["y9"])] * 2, "late10", 0.01)
    assert line.endswith("(within 0.01 cannot be shown if the observed difference of 0.0400 holds)")


def test_loss_figures_read_each_trainers_own_csv_columns(tmp_path):
    from accuracy_report import run_figure

    (tmp_path / "y9.json").write_text(json.dumps({"trainer": "y9", "map50_95": 0.5}))
    y9_rows = ["epoch,train/box,train/cls,train/dfl"] + [f"{e},{e},{2 * e},{3 * e}" for e in range(1, 13)]
    (tmp_path / "y9-results.csv").write_text("\n".join(y9_rows) + "\n")
    run = tmp_path / "run"  # bench_accuracy's own layout: RUN/result.json, RUN/official/results.csv
    (run / "official").mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({"trainer": "official", "map50_95": 0.5}))
    head = "               epoch,      train/box_loss,      train/cls_loss,      train/dfl_loss"
    rows = [head] + [f"{e:>20},{1.0:>20},{e:>20},{0.5:>20}" for e in range(0, 15)]
    (run / "official" / "results.csv").write_text("\n".join(rows) + "\n")
    assert run_figure(str(tmp_path / "y9.json"), "late10-cls") == pytest.approx(2 * 7.5)  # epochs 3-12
    assert run_figure(str(run / "result.json"), "late10-cls") == pytest.approx(9.5)  # epochs 5-14 (0-based)
    assert run_figure(str(run / "result.json"), "late10-dfl") == 0.5
    (tmp_path / "y9-results.csv").write_text("\n".join(y9_rows[:5]) + "\n")
    with pytest.raises(SystemExit, match="y9.json: its per-epoch CSV has no ten epochs of 'train/box'"):
        run_figure(str(tmp_path / "y9.json"), "late10-box")
