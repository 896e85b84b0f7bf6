"""``Result.save()`` never writes over the user's files: without a name it writes into the run folder, never over a
file y9 did not write; a path that is the source image is refused in one sentence."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import pytest

from tests.conftest import TEST_DATA
from y9core.errors import OutputError

SOURCE = TEST_DATA / "000000000009.jpg"


@pytest.fixture(scope="module")
def model():
    import y9

    return y9.Model()  # the embedded default model


def test_save_without_a_name_run_in_the_image_folder_keeps_the_image(model, tmp_path, monkeypatch):
    shutil.copy(SOURCE, tmp_path / SOURCE.name)
    (tmp_path / "other.jpg").write_bytes(b"not y9's")
    before = (tmp_path / SOURCE.name).read_bytes()
    monkeypatch.chdir(tmp_path)
    r = model.predict(SOURCE.name)[0]
    out = r.save()
    assert (tmp_path / SOURCE.name).read_bytes() == before
    assert out.resolve() == (tmp_path / "runs" / "predict" / SOURCE.name).resolve()
    assert cv2.imread(str(out)).shape == cv2.imread(SOURCE.name).shape
    assert r.save() == out  # its own file: written again, no new name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([SOURCE.name, "other.jpg", "runs"])
    assert (tmp_path / "other.jpg").read_bytes() == b"not y9's"


def test_save_to_the_source_path_is_refused(model, tmp_path, monkeypatch):
    src = tmp_path / SOURCE.name
    shutil.copy(SOURCE, src)
    before = src.read_bytes()
    monkeypatch.chdir(tmp_path)
    r = model.predict(str(src))[0]
    for given in (src, Path(SOURCE.name), Path(".") / ".." / tmp_path.name / SOURCE.name):
        with pytest.raises(OutputError, match="would write over the source image"):
            r.save(given)
    (tmp_path / "link.jpg").symlink_to(src)
    with pytest.raises(OutputError, match="source image"):
        r.save(tmp_path / "link.jpg")
    assert src.read_bytes() == before


def test_save_into_a_reused_folder_keeps_a_file_y9_did_not_write(model, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    theirs = folder / SOURCE.name
    theirs.write_bytes(b"the user's own file")
    r = model.predict(str(SOURCE), save=True, project=str(tmp_path), name="out", exist_ok=True)[0]
    out = r.save()
    assert theirs.read_bytes() == b"the user's own file"
    assert out.parent == folder and out.name != SOURCE.name
