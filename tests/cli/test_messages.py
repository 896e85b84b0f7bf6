"""The CLI's messages read correctly: every option and argument has help text; option errors are one `error:` line
(no panel); Ultralytics-style key=value arguments work for train, val, predict and export; the strings issue 33
found wrong ("1 objects", "batches of 1 to 1 images", "a drop of -0.27 points", no did-you-mean) read as English."""

from __future__ import annotations

import pytest
from typer.main import get_command

from tests.conftest import TEST_DATA, run_y9
from y9cli.app import app
from y9core.wording import change, count_range, did_you_mean, plural


def _commands(group, path=("y9",)):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))
        else:
            yield " ".join((*path, name)), cmd


def test_every_option_and_argument_has_help_text():
    missing = [f"{where} {p.opts[0] if p.opts else p.name}" for where, cmd in _commands(get_command(app))
               for p in cmd.params if not (getattr(p, "help", None) or "").strip()]  # fmt: skip
    assert missing == []
    assert len(list(_commands(get_command(app)))) >= 14


def _one_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "╭" not in captured.err and "│" not in captured.err  # no rich panel
    return lines[0]


def test_option_errors_are_one_error_line(capsys):
    assert run_y9(["predict", str(TEST_DATA / "000000000036.jpg"), "--conf", "3"]) == 2
    line = _one_error(capsys)
    assert line.startswith("error: y9 predict: Invalid value for '--conf'")
    assert line.endswith("the options are listed by 'y9 predict --help'.")
    assert run_y9(["predict"]) == 2
    assert _one_error(capsys) == "error: y9 predict: Missing argument 'source'; the options are listed by " \
                                 "'y9 predict --help'."  # fmt: skip
    assert run_y9(["exprt"]) == 2
    assert _one_error(capsys) == ("error: y9: No such command 'exprt'. Did you mean 'export'? The commands are "
                                  "listed by 'y9 --help'.")  # one sentence each, no '?;'
    assert run_y9(["nothing-like-it"]) == 2
    assert _one_error(capsys).endswith("'nothing-like-it'; the commands are listed by 'y9 --help'.")
    assert run_y9([]) == 0 and "Usage: y9" in capsys.readouterr().out  # `y9` alone: the help


def test_key_value_arguments_name_options(tmp_path, capsys):
    assert run_y9(["train", "data=" + str(tmp_path / "missing.yaml"), "epochs=1", "imgsz=64", "batch=2",
                   "device=cpu", "lr=0.1"]) == 2  # fmt: skip
    assert "unknown key lr (did you mean lr0 or lrf?)" in _one_error(capsys)  # data= reached --data: no "no data"
    assert run_y9(["val", "data=" + str(tmp_path / "missing.yaml"), f"model={tmp_path / 'm.onnx'}", "batch=4", "imgsz=64",
                   "device=cpu", "--project", tmp_path]) == 2  # fmt: skip
    assert "missing.yaml does not exist" in _one_error(capsys)
    assert run_y9(["predict", "source=" + str(tmp_path / "nothing.jpg"), "conff=0.5"]) == 2
    assert _one_error(capsys) == (
        "error: y9 predict: 'conff=0.5' names no option of this command (did you mean conf?); expected key=value "
        "with an option's name, e.g. imgsz=640 (see 'y9 predict --help')."
    )
    assert run_y9(["export", "model=" + str(tmp_path / "none.pt"), "imgsz=64", "batch=1", "device=cpu"]) == 2
    assert "no option of this command" in _one_error(capsys)  # export has no --device: said so, not ignored
    assert run_y9(["export", "model=" + str(tmp_path / "none.pt"), "imgsz=64", "batch=1", "simplify=false"]) == 2
    assert f"checkpoint {tmp_path / 'none.pt'} does not exist" in _one_error(capsys)


def test_an_option_value_that_looks_like_key_value_stays_the_value():
    from y9cli.key_values import as_options

    group = get_command(app)
    args = ["predict", "photos/", "--class-conf", "person=0.5", "conf=0.3", "no_images=true", "json=false"]
    assert as_options(group, args) == ["predict", "photos/", "--class-conf", "person=0.5", "--conf", "0.3",
                                       "--no-images", "--no-json"]  # fmt: skip
    assert as_options(group, ["export", "model=a.pt", "imgsz=64"]) == ["export", "--imgsz", "64", "a.pt"]
    assert as_options(group, ["info", "x=1"]) == ["info", "x=1"]  # other commands: unchanged


def test_train_with_key_values_runs(tmp_path, capsys):
    from tests.train.data_fixtures import coco_pair_dataset

    data = coco_pair_dataset(tmp_path / "data")
    assert run_y9(["train", f"data={data}", "model=gelan-t", "epochs=1", "imgsz=64", "batch=2", "device=cpu",
                   "workers=0", "val=false", "plots=false", f"project={tmp_path / 'runs'}"]) == 0  # fmt: skip
    assert "1/1 epochs" in capsys.readouterr().out
    assert (tmp_path / "runs" / "exp" / "weights" / "last.pt").exists()


def test_the_strings_that_read_wrong():
    assert plural(1, "object") == "1 object" and plural(0, "object") == "0 objects"
    assert plural(2, "box") == "2 boxes" and plural(1, "class") == "1 class"
    assert count_range(1, 1, "image") == "1 image" and count_range(1, 4, "image") == "1 to 4 images"
    assert change(-0.27) == "a drop of 0.27 points" and change(0.27) == "a gain of 0.27 points"
    assert change(0.001) == "no change" and change(-1.0) == "a drop of 1.00 point"
    assert did_you_mean("lr", ["lr0", "lrf", "momentum"]) == " (did you mean lr0 or lrf?)"
    assert did_you_mean("zzz", ["lr0"]) == ""


def test_verify_summary_says_gain_or_drop():
    from pathlib import Path

    from y9deploy.engine.verify import VerifyResult

    fields = dict(reference=Path("m.onnx"), candidate=Path("m.engine"), candidate_kind="engine", data=Path("d.yaml"),
                  split="val", images=1, reference_map50=0.5, candidate_map50=0.5, threshold_points=0.5)  # fmt: skip
    better = VerifyResult(reference_map50_95=0.4, candidate_map50_95=0.4027, **fields)
    assert better.summary().endswith("on 1 image of d.yaml 'val': a gain of 0.27 points (threshold 0.5)")
    worse = VerifyResult(reference_map50_95=0.4027, candidate_map50_95=0.4, **fields)
    assert worse.summary().endswith("a drop of 0.27 points (threshold 0.5)")


@pytest.mark.parametrize("lo, hi, text", [(1, 1, "batches of 1 image "), (1, 32, "batches of 1 to 32 images ")])
def test_engine_batch_range_message(lo, hi, text):
    from y9deploy.runtime.backends.tensorrt_backend import select_input_shape

    with pytest.raises(ValueError) as info:
        select_input_shape(((lo, 3, 64, 64), (lo, 3, 64, 64), (hi, 3, 64, 64)), hi + 1, where="model.engine")
    assert f"model.engine accepts {text}(its profile), not {hi + 1}." == str(info.value)


def test_doctor_reports_the_optional_parts_as_installed(capsys):
    import json
    from importlib.metadata import PackageNotFoundError, version

    def installed(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    assert run_y9(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["triton"] == installed("triton")  # reported whether or not a GPU is here
    assert report["tritonclient"] == installed("tritonclient")
    rtx = installed("tensorrt_rtx") or installed("tensorrt-rtx")
    assert (report["tensorrt_rtx"] is None) == (rtx is None)
    if installed("onnxruntime") or installed("onnxruntime-gpu"):
        import onnxruntime

        assert report["onnxruntime_providers"] == onnxruntime.get_available_providers()
    assert run_y9(["doctor"]) == 0
    table = capsys.readouterr().out
    for part in ("triton", "tritonclient", "TensorRT-RTX", "providers:"):
        assert part in table
