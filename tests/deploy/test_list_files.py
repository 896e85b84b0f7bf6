"""``.txt`` lists of sources (issue 57, item 3): lists that name themselves or each other are one sentence naming
the chain (no RecursionError), URL lines stay URLs (not ``http:/host``), a UTF-8 byte-order mark is dropped."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import TEST_DATA, y9_output
from y9deploy.pipelines.sources import source_entries, source_roots

IMAGE = sorted(TEST_DATA.glob("*.jpg"))[0]


def test_a_list_that_names_itself_is_one_sentence_naming_it(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text(f"{IMAGE}\na.txt\n")
    with pytest.raises(ValueError, match=rf"list file .*a.txt names itself through {a} -> {a}; expected"):
        source_entries(str(a))
    res = y9_output("predict", a, "--no-save")
    assert res.returncode == 2 and "names itself through" in res.stderr and "Traceback" not in res.stderr


def test_two_lists_that_name_each_other_name_the_chain(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("b.txt\n")
    b.write_text(f"{IMAGE}\na.txt\n")
    with pytest.raises(ValueError, match=rf"names itself through {a} -> {b} -> {a}; expected"):
        source_roots(str(a))


def test_nested_lists_without_a_circle_are_opened_up_in_order(tmp_path):
    shutil.copy(IMAGE, tmp_path / "x.jpg")
    (tmp_path / "inner.txt").write_text("x.jpg\n")
    (tmp_path / "outer.txt").write_text(f"inner.txt\n{IMAGE}\ninner.txt\n")
    got = source_entries(str(tmp_path / "outer.txt"))
    assert got == [tmp_path / "x.jpg", IMAGE, tmp_path / "x.jpg"]


def test_url_lines_stay_urls_and_a_bom_is_dropped(tmp_path):
    shutil.copy(IMAGE, tmp_path / "x.jpg")
    lst = tmp_path / "l.txt"
    lst.write_bytes(b"\xef\xbb\xbfx.jpg\nhttp://127.0.0.1:9/a.jpg\nrtsp://cam.local/stream1\n")
    got = source_entries(str(lst))
    assert got == [tmp_path / "x.jpg", "http://127.0.0.1:9/a.jpg", "rtsp://cam.local/stream1"]
    assert source_roots(str(lst)) == [tmp_path / "x.jpg"]
