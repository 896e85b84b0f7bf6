"""Unbounded work (issue 34 item 8) and unwarned oddities (item 9), for ``bench_faults.py`` (outcomes as in
``fault_cases``)."""

from __future__ import annotations

import yaml
from fault_cases import BOUND_MB, TRAIN, Context, Outcome, judge

from tests.reliability.hostile_images import with_exif_orientation
from tests.train.data_fixtures import COCO_36, add_image, coco_pair_dataset


def billion_laughs(key: str) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    return "\n".join([*lines, f"{key}: *a8"]) + "\n"


def _dataset(d, **changes):
    yml = coco_pair_dataset(d / "data")
    raw = yaml.safe_load(yml.read_text())
    raw.update(changes)
    yml.write_text(yaml.safe_dump(raw, sort_keys=False))
    return yml


def alias_bomb_names(ctx: Context, d) -> Outcome:
    yml = _dataset(d)
    raw = yaml.safe_load(yml.read_text())
    raw.pop("nc")
    yml.write_text(yaml.safe_dump(raw) + billion_laughs("names"))
    run = ctx.y9(["data", "check", str(yml)], d, timeout=180)
    return judge(
        "data check: alias bomb as names", run, [str(yml), "aliases"], expect="error", bound_mb=BOUND_MB
    )


def one_value_bomb(key: str) -> str:
    """The same nine levels inside the value of one key (every anchor defined in a list under it)."""
    levels = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    return f"{key}: [{', '.join(levels)}]\n"


def alias_bomb_hyp(ctx: Context, d) -> Outcome:
    yml = _dataset(d)
    hyp = d / "hyp.yaml"
    hyp.write_text(one_value_bomb("lr0"))  # a known key: the value itself is the bomb
    run = ctx.y9(["train", "--data", str(yml), "--hyp", str(hyp), *TRAIN, "--project", str(d / "r")], d,
                 timeout=180, address_space=None)  # fmt: skip
    return judge("train: alias bomb as a hyperparameter file", run, [str(hyp), "aliases"], expect="error")


def yaml_syntax(ctx: Context, d) -> Outcome:
    yml = _dataset(d)
    yml.write_text(yml.read_text() + "names: [a, b\n")
    run = ctx.y9(["data", "check", str(yml)], d)
    return judge("data check: data.yaml syntax error", run, [f"{yml}:"], expect="error")


def huge_label_line(ctx: Context, d) -> Outcome:
    yml = _dataset(d)
    label = d / "data" / "labels" / "train" / "a.txt"
    with open(label, "w") as f:
        for _ in range(100):
            f.write("0.5 " * 250_000)  # one 100 MB line
        f.write("\n")
    run = ctx.y9(["data", "check", str(yml), "--no-cache"], d, timeout=300)
    return judge(
        "data check: a 100 MB one-line label file", run, [f"{label}:1"], expect="error", bound_mb=BOUND_MB
    )


def huge_polygon(ctx: Context, d) -> Outcome:
    rules = d / "rules.yaml"
    rules.write_text(
        "regions:\n  r: {polygon: [" + "[1, 2], " * 1_000_000 + "[3, 4]]}\nrules:\n  - {name: a, max: 0}\n"
    )
    (d / "parts").mkdir()
    (d / "parts" / "a.jpg").write_bytes(COCO_36.read_bytes())
    run = ctx.y9(["inspect", str(d / "parts"), "-m", str(ctx.onnx), "-r", str(rules), "--out", str(d / "audit")],
                 d, timeout=300)  # fmt: skip
    return judge(
        "inspect: a rules polygon of 1M points", run, [str(rules)], expect="error", bound_mb=BOUND_MB
    )


BOUND_CASES = [
    ("alias bomb as names (data check)", alias_bomb_names),
    ("alias bomb as a hyp file (train)", alias_bomb_hyp),
    ("data.yaml syntax error (data check)", yaml_syntax),
    ("100 MB one-line label file (data check)", huge_label_line),
    ("1M-point rules polygon (inspect)", huge_polygon),
]


def _warned(ctx: Context, d, case: str, yml, needles: list[str], command: str) -> Outcome:
    args = ["data", "check", str(yml), "--no-cache"] if command == "data check" else \
        ["train", "--data", str(yml), *TRAIN, "--project", str(d / "runs"), "--name", "r"]  # fmt: skip
    run = ctx.y9(args, d, address_space=None)
    return judge(f"{command}: {case}", run, needles, expect="report")


def duplicate_names(command: str):
    def case(ctx: Context, d) -> Outcome:
        names = [f"c{i}" for i in range(80)]
        names[3] = "C1 "
        yml = _dataset(d, names=names)
        return _warned(ctx, d, "near-duplicate class names", yml, ["differ only in case"], command)

    return case


def val_is_train(command: str):
    def case(ctx: Context, d) -> Outcome:
        yml = _dataset(d, val="images/train")
        return _warned(ctx, d, "val = train", yml, ["the val split is the training split"], command)

    return case


def orphan_label(command: str):
    def case(ctx: Context, d) -> Outcome:
        yml = _dataset(d)
        orphan = d / "data" / "labels" / "train" / "gone.txt"
        orphan.write_text("0 0.5 0.5 0.1 0.1\n")
        return _warned(ctx, d, "an orphan label file", yml, [str(orphan), "no image"], command)

    return case


def exif_turned(command: str):
    def case(ctx: Context, d) -> Outcome:
        yml = _dataset(d)
        img = add_image(d / "data", "train", "turned.jpg", COCO_36, "0 0.5 0.5 0.2 0.2\n")
        img.write_bytes(with_exif_orientation(COCO_36.read_bytes(), 6))
        return _warned(ctx, d, "an EXIF-turned image", yml, [str(img), "EXIF orientation"], command)

    return case


WARN_CASES = [
    (f"{what} ({command})", make(command))
    for command in ("data check", "train")
    for what, make in (("near-duplicate class names", duplicate_names), ("val = train", val_is_train),
                       ("orphan label file", orphan_label), ("EXIF-turned image", exif_turned))
]  # fmt: skip
