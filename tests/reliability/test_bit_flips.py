"""Bit flips in ONNX files written by `y9 export` and in TensorRT engines: every damaged copy is refused.

A flip in an ONNX file's weights still parses and runs in ONNX Runtime (shown below), so y9 exports carry a
sha256 digest of the file (``y9_digest``) that the runtime and the engine builder check. Files without one
(other tools, earlier y9) are not checked: a weight flip there loads silently, which is documented here too.
Engines are checked against the sha256 and size in their manifest.
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import onnxruntime
import pytest

from tests.deploy.runtime_support import export_tiny_onnx
from y9core.errors import ModelFileError
from y9deploy import Detector
from y9deploy.engine.onnx_info import inspect_onnx
from y9deploy.model_file.onnx_digest import DIGEST_KEY


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """A real `y9 export` of a gelan-t with random weights (64x64, unsimplified: a few seconds)."""
    from y9deploy.export.onnx_export import export_onnx_report
    from y9train.models import build_model

    path = tmp_path_factory.mktemp("sealed") / "gelan-t.onnx"
    export_onnx_report(build_model("gelan-t", nc=80), path, imgsz=64, simplify=False, check=False)
    return path


def _flipped(src, dst, position, bit=0):
    data = bytearray(src.read_bytes())
    data[position] ^= 1 << bit
    dst.write_bytes(bytes(data))
    return dst


def _unsealed(path) -> bytes:
    """The model of ``path`` without its digest entry, serialized again by onnx itself."""
    model = onnx.load(str(path))
    kept = [(p.key, p.value) for p in model.metadata_props if p.key != DIGEST_KEY]
    assert len(kept) == len(model.metadata_props) - 1
    del model.metadata_props[:]
    for key, value in kept:
        model.metadata_props.add(key=key, value=value)
    return model.SerializeToString()


def _weight_offset(path) -> int:
    model = onnx.load(str(path))
    init = max(model.graph.initializer, key=lambda t: len(t.raw_data))
    at = path.read_bytes().find(init.raw_data)
    assert at > 0
    return at + len(init.raw_data) // 2


def test_the_export_is_sealed_and_loads(sealed):
    with Detector(sealed, device="cpu") as det:
        assert det.backend.digest_checked is True
        assert len(det.predict(np.full((48, 80, 3), 90, np.uint8))) >= 0


def test_a_flip_in_the_weights_parses_and_runs_but_is_refused(sealed, tmp_path):
    bad = _flipped(sealed, tmp_path / "weights.onnx", _weight_offset(sealed), bit=6)
    onnx.load(str(bad))  # still a valid protobuf ...
    onnxruntime.InferenceSession(str(bad), providers=["CPUExecutionProvider"])  # ... that ONNX Runtime runs
    with pytest.raises(ModelFileError, match="damaged or was modified after `y9 export`") as err:
        Detector(bad, device="cpu")
    assert str(bad) in str(err.value) and DIGEST_KEY in str(err.value)
    with pytest.raises(ModelFileError, match=str(bad)):  # y9 build-engine reads it through inspect_onnx
        inspect_onnx(bad)


def test_seeded_flips_anywhere_are_all_refused(sealed, tmp_path):
    data = sealed.read_bytes()
    recorded = [p.value for p in onnx.load(str(sealed)).metadata_props if p.key == DIGEST_KEY]
    assert len(recorded) == 1 and recorded[0].startswith("sha256:")
    key_at = data.rfind(DIGEST_KEY.encode())  # a flip of the key's own name disables the check: left out
    rng = np.random.default_rng(13)
    positions = [int(p) for p in rng.integers(0, len(data), 40) if not key_at <= p < key_at + len(DIGEST_KEY)]
    positions += [0, 1, len(data) - 1, _weight_offset(sealed)]  # the header, the digest's last hex digit
    loaded = []
    for i, pos in enumerate(positions):
        bad = _flipped(sealed, tmp_path / f"flip{i}.onnx", pos, bit=i % 8)
        try:
            Detector(bad, device="cpu").close()
            loaded.append(pos)
        except ModelFileError as exc:
            assert str(bad) in str(exc) and "\n" not in str(exc)
    assert loaded == []


def test_a_flip_in_an_unsealed_file_is_not_detected(sealed, tmp_path):
    """Documented: without y9's digest (other tools, earlier y9 versions) a weight flip loads."""
    unsealed = tmp_path / "unsealed.onnx"
    unsealed.write_bytes(_unsealed(sealed))
    bad = _flipped(unsealed, tmp_path / "unsealed-flip.onnx", _weight_offset(unsealed), bit=6)
    with Detector(bad, device="cpu") as det:
        assert det.backend.digest_checked is False


# ---------------------------------------------------------------------------------------------- engines
@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    pytest.importorskip("tensorrt_rtx")
    from y9deploy.engine.builder import build_engine

    root = tmp_path_factory.mktemp("engine")
    onnx_path = export_tiny_onnx(root / "tiny.onnx", imgsz=(64, 64))
    return build_engine(onnx_path, root / "tiny.engine", batch=1, target="sm89")


def _engine_copy(engine, dst_dir, name):
    dst = dst_dir / name
    shutil.copy(engine, dst)
    shutil.copy(engine.with_name(engine.name + ".json"), dst.with_name(dst.name + ".json"))
    return dst


def test_a_flipped_engine_is_refused(engine, tmp_path):
    size = engine.stat().st_size
    for i, pos in enumerate((size // 2, size // 3, size - 1)):
        bad = _engine_copy(engine, tmp_path, f"flip{i}.engine")
        _flipped(bad, bad, pos, bit=i)
        with pytest.raises(ModelFileError, match="is corrupt or was modified") as err:
            Detector(bad)
        assert str(bad) in str(err.value)


def test_a_truncated_engine_and_a_damaged_manifest_are_refused(engine, tmp_path):
    cut = _engine_copy(engine, tmp_path, "cut.engine")
    cut.write_bytes(cut.read_bytes()[:-100])
    with pytest.raises(ModelFileError, match=f"{cut} is .* bytes but its manifest records"):
        Detector(cut)
    broken = _engine_copy(engine, tmp_path, "broken.engine")
    manifest = broken.with_name(broken.name + ".json")
    manifest.write_text(manifest.read_text()[:-20])
    with pytest.raises(ModelFileError, match=str(manifest)):
        Detector(broken)


def test_the_intact_engine_passes_the_integrity_check(engine, tmp_path):
    """On this CPU box the intact engine is refused only for the missing GPU, not as damaged."""
    try:
        Detector(engine).close()
    except Exception as exc:  # noqa: BLE001 - any refusal here must not be the integrity one
        assert "corrupt" not in str(exc) and "truncated" not in str(exc), exc


def test_y9_info_checks_an_engine(engine, tmp_path, capsys):
    from y9cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["info", str(engine), "--json"])
    assert exit_info.value.code == 0 and '"engine_sha256"' in capsys.readouterr().out
    bad = _engine_copy(engine, tmp_path, "info.engine")
    _flipped(bad, bad, bad.stat().st_size // 2)
    with pytest.raises(SystemExit) as exit_info:
        main(["info", str(bad)])
    out = capsys.readouterr()
    assert exit_info.value.code == 2 and "Traceback" not in out.err + out.out
    assert out.err.startswith(f"error: {bad} is corrupt or was modified")
