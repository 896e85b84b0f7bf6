"""One writer per output file (``y9core.files.output_file``, issue 46): of two commands writing one file at once, neither
with --exist-ok, exactly one writes and the other refuses in one sentence naming the file; nothing the first wrote
is lost."""

from __future__ import annotations

import threading

import pytest

from y9core.errors import OutputError
from y9core.files.atomic_write import atomic_write
from y9core.files.output_file import claim_output_file, lock_path

ROUNDS = 1  # a lock that does not exclude fails round 0 already (checked with per-thread lock files: both race tests fail)


@pytest.fixture(scope="module")
def small_pt(tmp_path_factory):
    """A gelan-t y9 checkpoint (2 classes): quick to export and re-parameterize."""
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    model = build_model("gelan-t", nc=2).eval()
    return save_checkpoint(model, tmp_path_factory.mktemp("pt") / "m.pt", imgsz=64)


def _race(args_of, capsys, rounds: int = ROUNDS):
    """Start two ``y9`` commands writing one file at once (``y9cli.app.run`` in two threads, released together),
    ``rounds`` times; each round's two exit statuses and the ``error:`` lines printed."""
    from y9cli.app import run

    outcomes = []
    for k in range(rounds):
        gate, got = threading.Barrier(2), {}

        def go(i: int, args: list[str], gate=gate, got=got) -> None:
            gate.wait()
            got[i] = run([str(a) for a in args])

        threads = [threading.Thread(target=go, args=(i, a)) for i, a in enumerate(args_of(k))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        err = capsys.readouterr().err
        outcomes.append((sorted(got.values()), [ln for ln in err.splitlines() if ln.startswith("error: ")]))
    return outcomes


def _one_wrote_one_refused(outcomes, out_of, what: str) -> None:
    for k, (codes, errors) in enumerate(outcomes):
        assert codes == [0, 2], (k, errors)
        assert len(errors) == 1, errors
        out = out_of(k)
        assert f"{what} {out}" in errors[0], errors[0]
        assert "being written by another y9 process" in errors[0] or "already exists" in errors[0], errors[0]
        assert out.is_file() and not lock_path(out).exists()
        assert not list(out.parent.glob(f".{out.name}*.tmp"))


def test_two_exports_of_one_file_at_once_one_writes(small_pt, tmp_path, capsys):
    out_of = lambda k: tmp_path / f"x{k}.onnx"  # noqa: E731
    common = ["--imgsz", "64", "--no-check", "--no-simplify"]
    outcomes = _race(lambda k: [["export", small_pt, "-o", out_of(k), *common]] * 2, capsys)
    _one_wrote_one_refused(outcomes, out_of, "output ONNX file")
    import onnx

    for k in range(ROUNDS):
        onnx.checker.check_model(str(out_of(k)))  # the winner's model, whole


def test_two_reparams_of_one_file_at_once_one_writes(small_pt, tmp_path, capsys):
    out_of = lambda k: tmp_path / f"r{k}.pt"  # noqa: E731
    outcomes = _race(lambda k: [["reparam", small_pt, out_of(k)], ["reparam", small_pt, out_of(k), "--fuse"]], capsys)
    _one_wrote_one_refused(outcomes, out_of, "output checkpoint")
    from y9train.checkpoint import load_checkpoint

    for k in range(ROUNDS):
        load_checkpoint(out_of(k))


def test_a_second_claim_of_a_held_file_is_refused_naming_it(tmp_path):
    out = tmp_path / "a.onnx"
    with claim_output_file(out, what="output ONNX file"):
        with (
            pytest.raises(OutputError, match=r"output ONNX file .*a\.onnx is being written by another y9 process"),
            claim_output_file(out, what="output ONNX file", exist_ok=True),
        ):
            pass
        atomic_write(out, b"first")
    assert out.read_bytes() == b"first" and not lock_path(out).exists()
    with (
        pytest.raises(OutputError, match="already exists"),  # the first writer finished: its file is kept
        claim_output_file(out, what="output ONNX file"),
    ):
        pass
    assert out.read_bytes() == b"first"


def test_a_file_that_appears_meanwhile_is_kept_not_replaced(tmp_path):
    out = tmp_path / "a.onnx"
    with claim_output_file(out, what="output ONNX file"):
        out.write_bytes(b"another program's")  # a writer that does not take the lock
        with pytest.raises(OutputError, match=r"a\.onnx appeared while this process was writing it"):
            atomic_write(out, b"mine")
    assert out.read_bytes() == b"another program's"
    assert not list(tmp_path.glob(".*.tmp"))
    with claim_output_file(out, what="output ONNX file", exist_ok=True):
        atomic_write(out, b"mine")  # --exist-ok replaces it
    assert out.read_bytes() == b"mine"


@pytest.mark.parametrize("command", ["benchmark --json", "build-engine", "reparam", "export"])
def test_every_file_writer_refuses_a_file_another_writer_holds(small_pt, tmp_path, capsys, command):
    from tests.conftest import run_y9
    from tests.deploy.fixed_onnx import fixed_boxes_onnx

    onnx_path = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    out = tmp_path / {"benchmark --json": "b.json", "build-engine": "m.engine", "reparam": "r.pt",
                      "export": "x.onnx"}[command]  # fmt: skip
    args = {"benchmark --json": ["benchmark", onnx_path, "--json", out, "--iters", "1", "--warmup", "0"],
            "build-engine": ["build-engine", onnx_path, "-o", out], "reparam": ["reparam", small_pt, out],
            "export": ["export", small_pt, "-o", out]}[command]  # fmt: skip
    with claim_output_file(out, what="held", exist_ok=True):
        assert run_y9(args) == 2
    (error,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error: ")]
    assert f" {out} is being written by another y9 process (pid " in error, error
    assert not out.exists()
