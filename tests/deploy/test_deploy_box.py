"""A deployment box without torch: `y9 val`, `y9 predict`, `y9 benchmark` and `y9 inspect` on the embedded model's
ONNX run in a process where `import torch` fails (a shim package first on PYTHONPATH), exit 0, and give the results
the same commands give in this process (which has torch)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.conftest import REPO, TEST_DATA

COCO8 = TEST_DATA / "coco8.yaml"
RULES = "version: 1\nrules:\n  - {name: someone, classes: [person], min: 1}\n"


@pytest.fixture(scope="module")
def box(embedded_export, tmp_path_factory):
    root = tmp_path_factory.mktemp("box")
    shim = root / "shim" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("no torch on this deployment box (test shim)")\n')
    images = root / "images"
    images.mkdir()
    for name in ("000000000036.jpg", "000000000042.jpg"):
        shutil.copy(TEST_DATA / name, images / name)
    (root / "rules.yaml").write_text(RULES)
    return {"root": root, "shim": shim.parent, "onnx": embedded_export(), "images": images,
            "rules": root / "rules.yaml"}  # fmt: skip


def _commands(b, out) -> dict[str, list[str]]:
    return {
        "val": ["val", "--data", str(COCO8), "--model", str(b["onnx"]), "--workers", "1"],
        "predict": ["predict", str(b["images"]), "--model", str(b["onnx"]), "--save-dir", str(out / "predict")],
        "benchmark": ["benchmark", str(b["onnx"]), "--iters", "2", "--warmup", "0", "--json", str(out / "b.json")],
        "inspect": ["inspect", str(b["images"]), "--model", str(b["onnx"]), "--rules", str(b["rules"]), "--out",
                    str(out / "inspect"), "--quiet"],
    }  # fmt: skip


def _all_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("all "))


def test_deployed_commands_run_without_torch(box, capsys):
    out = box["root"] / "without-torch"
    code = textwrap.dedent(f"""
        import json, sys
        try:
            import torch
        except ImportError:
            pass
        else:
            raise SystemExit("the shim did not hide torch")
        from y9cli.app import main
        codes = {{}}
        for name, argv in {_commands(box, out)!r}.items():
            try:
                main(argv)
            except SystemExit as exc:
                codes[name] = exc.code
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "y9train"))
        print("RESULT " + json.dumps({{"codes": codes, "loaded": loaded}}))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(box["shim"]), str(REPO)])}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=box["root"], env=env,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert result["codes"] == {"val": 0, "predict": 0, "benchmark": 0, "inspect": 0}, res.stderr[-3000:]
    assert result["loaded"] == []  # neither torch nor the trainer was imported

    # the same commands in this process (torch importable): the same results
    here = box["root"] / "with-torch"
    from y9cli.app import main

    commands = _commands(box, here)
    commands["val"].append("--no-plots")  # here only the table is compared (the box above drew its pictures)
    for name in ("val", "predict", "inspect"):
        with pytest.raises(SystemExit) as done:
            main(commands[name])
        assert done.value.code == 0
        if name == "val":
            val_here = capsys.readouterr().out
    assert _all_line(res.stdout) == _all_line(val_here)
    for folder in ("predict",):
        a = json.loads((out / folder / "predictions.json").read_text())["results"]
        b = json.loads((here / folder / "predictions.json").read_text())["results"]
        assert [len(r["detections"]) for r in a] == [len(r["detections"]) for r in b] and sum(map(len, [
            r["detections"] for r in a])) > 0  # fmt: skip
        for ra, rb in zip(a, b):
            np.testing.assert_allclose([d["xyxy"] for d in ra["detections"]], [d["xyxy"] for d in rb["detections"]],
                                       atol=1e-3)  # fmt: skip
    verdicts = [
        sorted((r["item"], r["verdict"]) for r in map(json.loads, (d / "inspect" / "audit.jsonl").read_text().splitlines()))
        for d in (out, here)
    ]
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) == 2
    case = json.loads((out / "b.json").read_text())["cases"][0]
    assert (case["backend"], case["imgsz"], case["iters"]) == ("onnxruntime", [416, 416], 2)
