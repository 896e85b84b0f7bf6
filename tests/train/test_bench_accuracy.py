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
from y9train.hyp import Hyp, load_hyp

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
    out = tmp_path / "run"
    bench.main(["run", "--data", str(split), "--out", str(out), "--model", "gelan-t", "--epochs", "1",
                "--imgsz", "64", "--batch", "4", "--workers", "0", "--cache", "none", "--label", "cpu"])  # fmt: skip
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


def _official_label_path(image: str) -> str:
    """The official ``utils/dataloaders.img2label_paths`` rule, restated: the last ``/images/`` -> ``/labels/``,
    the suffix after the last dot -> ``txt``."""
    head, _, tail = image.rpartition("/images/")
    return (head + "/labels/" + tail).rsplit(".", 1)[0] + ".txt"


def test_official_order_seed_renames_the_training_images_into_an_order_set_by_the_seed(split, tmp_path):
    import official_order  # benchmarks/, on the path once bench_accuracy is loaded

    train = split.parent.joinpath("train.txt").read_text().split()
    background = Path(train[2])
    Path(_official_label_path(str(background))).unlink()  # an image without labels stays without
    orders = {}
    for seed, folder in ((0, "a"), (0, "b"), (1, "c")):
        data = official_order.seeded_split(split, tmp_path / folder, seed)
        cfg = yaml.safe_load(data.read_text())
        assert Path(cfg["val"]) == split.parent / "eval.txt"  # the evaluation list is the split's own
        listed = (Path(cfg["path"]) / cfg["train"]).read_text().split()
        # the official sorts its list: that order, resolved to the original files, is what it trains in
        resolved = [str(Path(p).resolve()) for p in sorted(listed)]
        assert sorted(resolved) == sorted(train)  # every training image once, nothing else
        for p in listed:
            label, original = (
                Path(_official_label_path(p)),
                Path(_official_label_path(str(Path(p).resolve()))),
            )
            if Path(p).resolve() == background.resolve():
                assert not label.exists()
            else:
                assert label.read_bytes() == original.read_bytes()  # each image keeps its own labels
        orders[folder] = resolved
    assert orders["a"] == orders["b"]  # the same seed, the same order
    assert orders["a"] != orders["c"]  # another seed, another order
    assert train not in (orders["a"], orders["c"])  # and neither is the split's sorted order


def test_official_order_seed_is_what_the_official_command_trains_on(split, tmp_path):
    args = bench.build_parser().parse_args(
        [
            "run",
            "--data",
            str(split),
            "--out",
            str(tmp_path),
            "--reference",
            "official",
            "--official-order",
            "seed",
        ]
    )
    assert bench.build_parser().parse_args(["run", "--data", "d", "--out", "o"]).official_order == "fixed"
    data = bench.seeded_split(split, tmp_path / "seeded_split", args.seed)
    cmd = bench.official_command(args, tmp_path, data)
    assert cmd[cmd.index("--data") + 1] == str(data.resolve())
    assert bench.official_command(args, tmp_path)[cmd.index("--data") + 1] == str(split.resolve())


def test_sync_reads_both_trainers_per_epoch_figures_over_the_epochs_asked(tmp_path):
    swing = [0.05, -0.08, 0.02, 0.09, -0.04, -0.06, 0.03, 0.01, -0.02, 0.07]  # epochs 31-40
    runs = {
        # official --score-epochs 12: epochs 29-40, JSON string keys; the same swings on two trends
        "off1": {"trainer": "official", "epochs": 40, "per_epoch_scored": {
            str(e): 0.3 + 0.01 * e + (swing[e - 31] if e > 30 else 0.2) for e in range(29, 41)}},
        "off2": {"trainer": "official", "epochs": 40, "per_epoch_scored": {
            str(e): 0.5 + (swing[e - 31] if e > 30 else -0.3) for e in range(29, 41)}},
        # y9: every epoch from 1; the mirrored swings over 31-40
        "y9": {"trainer": "y9", "epochs": 40, "per_epoch_map50_95": [0.9] * 30 + [0.4 - s for s in swing]},
    }  # fmt: skip
    paths = {}
    for name, r in runs.items():
        paths[name] = str(tmp_path / f"{name}.json")
        Path(paths[name]).write_text(json.dumps(r))
    line = bench.sync_runs([paths["off1"], paths["off2"]], [paths["y9"]], 31, 40)
    assert line == (
        "epochs 31-40, detrended mAP50-95, mean correlation: within A +1.000 (1 pairs)  across -1.000 (2 pairs)"
    )
    with pytest.raises(
        SystemExit, match=r"off1.json: has no mAP50-95 by y9's evaluator for epochs \[25, 26, 27, 28\]"
    ):
        bench.sync_runs([paths["off1"], paths["off2"]], [paths["y9"]], 25, 40)
