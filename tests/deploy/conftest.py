"""Session fixtures of the deploy tests: the embedded model and its ONNX exports, made once per test run (shared
by the pytest-xdist workers)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import made_once
from tests.deploy.embedded import IMGSZ, coco8_images, embedded_model_path


@pytest.fixture(scope="session")
def embedded_pt() -> Path:
    """The embedded default model (a y9 checkpoint, 80 COCO classes)."""
    return embedded_model_path()


@pytest.fixture(scope="session")
def embedded_export(embedded_pt, tmp_path_factory):
    """``embedded_export(imgsz=IMGSZ, **export_options) -> Path``: the embedded model exported to ONNX with these
    options (``dynamic_batch``, ``end2end``, ``half``, ``conf`` ...), exported once per run: the first worker to
    ask exports under a file lock, the others wait for it and share the file (``tests.conftest.made_once``)."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")

    def get(imgsz: int = IMGSZ, **options) -> Path:
        from y9deploy.export.onnx_export import export_onnx_report

        name = "-".join([f"e{imgsz}", *(f"{k}={v}" for k, v in sorted(options.items()))])
        def export(folder: Path) -> None:
            report = export_onnx_report(embedded_pt, folder / f"{name}.onnx", imgsz=imgsz, **options)
            parity = [{"rtol": p.rtol, "passed": p.passed, "batch": p.batch} for p in report.parity]
            (folder / f"{name}.report.json").write_text(json.dumps({"parity": parity}))

        return made_once(tmp_path_factory, f"embedded-{name}", export) / f"{name}.onnx"

    return get


@pytest.fixture(scope="session")
def embedded_export_parity(embedded_export):
    """``embedded_export_parity(imgsz=IMGSZ, **export_options) -> list[dict]``: the export report's parity checks
    (``rtol``, ``passed``, ``batch`` of each) of ``embedded_export`` with the same options."""

    def get(imgsz: int = IMGSZ, **options) -> list[dict]:
        path = embedded_export(imgsz, **options)
        return json.loads(path.with_suffix(".report.json").read_text())["parity"]

    return get


@pytest.fixture(scope="session")
def coco8():
    """The eight coco8 images of tests/data (``LabelledImage``: path, frame, boxes in pixels)."""
    return coco8_images()


@dataclass(frozen=True)
class CliRun:
    """One ``y9`` command run in ``cwd``: its exit status and what it printed (stdout, stderr)."""

    cwd: Path
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def embedded_val(embedded_pt, tmp_path_factory) -> CliRun:
    """``y9 val --data coco128/data.yaml --model <embedded .pt> --workers 0 --batch 16 --save-json``, run once per test
    run in an empty folder (no --project: the run folder is the default ``runs/val`` there), through the console
    entry point in this process; shared by the workers (``made_once``). test_val_report reads its files,
    test_val_and_verify compares its mAP with ``y9 val`` of the ONNX."""
    from tests.conftest import shared_path, y9_output

    data = shared_path("datasets", "coco128", "data.yaml")

    def run(folder: Path) -> None:
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(folder)
            res = y9_output("val", "--data", data, "--model", embedded_pt, "--workers", "0", "--batch", "16",
                            "--save-json")  # fmt: skip
        (folder / "cli.json").write_text(json.dumps([res.returncode, res.stdout, res.stderr]))

    folder = made_once(tmp_path_factory, "embedded-val", run)
    code, out, err = json.loads((folder / "cli.json").read_text())
    return CliRun(folder, code, out, err)
