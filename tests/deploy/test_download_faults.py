"""Downloads of official weights that end (issue 57, item 2), against a hostile local server on 127.0.0.1: an endless
body stops at the size cap, a server that drips a byte at a time meets the total deadline, a body cut short or longer
than its Content-Length is never published into the cache, a bad cached file is named and moved aside, the ``.part``
of a dead process is cleared, a write failure is said as such, and every command takes an official name."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import y9
from tests.conftest import REPO, TEST_DATA, shared_path, y9_output
from tests.deploy.hostile_server import HTML, serve
from y9.model_files import restricted_load
from y9deploy.model_file import download as dl
from y9deploy.model_file import official_weights as ow


@pytest.fixture
def server(tmp_path, monkeypatch):
    srv = serve(shared_path("fixtures", "official", "gelan-t-converted-official-format.pt").read_bytes())
    cache = tmp_path / "cache"
    monkeypatch.setenv(ow.URL_ENV, f"http://127.0.0.1:{srv.server_port}/")
    monkeypatch.setenv(ow.DIR_ENV, str(cache))
    monkeypatch.setitem(ow.OFFICIAL, "gelan-c.pt", ow.OfficialWeights("gelan-c.pt"))
    monkeypatch.chdir(tmp_path)
    srv.cache = cache
    yield srv
    srv.shutdown()
    srv.server_close()


def _refused(srv, *, match: str, seconds: float) -> str:
    t0 = time.monotonic()
    with pytest.raises(ow.WeightsDownloadError, match=match) as err:
        ow.weights_path("gelan-c.pt", progress=lambda *a: None, verify=restricted_load)
    assert time.monotonic() - t0 < seconds
    assert not (srv.cache / "gelan-c.pt").exists() and not list(srv.cache.glob("*.part"))  # nothing published
    return str(err.value)


def test_an_endless_body_stops_at_the_size_cap(server, monkeypatch):
    monkeypatch.setattr(dl, "MAX_BYTES", 4 << 20)
    server.mode = "endless"
    said = _refused(server, match=r"the body goes on past 4194304 bytes, the most y9 accepts", seconds=20)
    assert said.startswith("cannot download gelan-c.pt from http://127.0.0.1:")
    server.huge_length, server.mode = 10 * dl.MAX_BYTES, "huge"  # announced above the cap: refused before the body is read
    _refused(server, match=r"announces 41943040 bytes, more than the 4194304 bytes y9 accepts", seconds=5)
    server.mode = "endless"
    monkeypatch.setenv(dl.MAX_MB_ENV, "2")  # the documented setting
    _refused(server, match=r"the body goes on past 2097152 bytes", seconds=20)


def test_a_server_that_drips_meets_the_total_deadline(server, monkeypatch):
    monkeypatch.setenv(dl.DEADLINE_ENV, "1.5")
    server.mode = "drip"
    _refused(server, match=r"bytes arrived in the 1.5 s allowed for the whole file", seconds=6)


@pytest.mark.parametrize(
    ("mode", "match"),
    [("short", "the body stopped at"), ("cut", "is not a checkpoint"), ("long", "is not a checkpoint"),
     ("html", "is not a checkpoint")],
)  # fmt: skip
def test_a_body_cut_short_or_too_long_or_a_web_page_is_never_published(server, mode, match):
    server.mode = mode
    said = _refused(server, match=match, seconds=30)
    assert str(server.cache / "gelan-c.pt") in said  # where to put the file by hand
    server.mode = "whole"  # the next run downloads again and keeps the whole file
    assert ow.weights_path("gelan-c.pt", progress=lambda *a: None) == server.cache / "gelan-c.pt"
    assert len(server.requests) == 2


@pytest.mark.parametrize("content", [HTML, os.urandom(4096), b""])
def test_a_bad_cached_file_is_named_moved_aside_and_downloaded_again(server, content, capsys):
    server.cache.mkdir()
    (server.cache / "gelan-c.pt").write_bytes(content)
    with pytest.raises(ow.WeightsDownloadError, match=r"the cached download .*gelan-c.pt of http.* is not a "
                                                      r"checkpoint .* moved aside to gelan-c.pt.bad-"):  # fmt: skip
        y9.Model("gelan-c.pt")
    (aside,) = server.cache.glob("gelan-c.pt.bad-*")
    assert aside.read_bytes() == content and server.requests == []
    m = y9.Model("gelan-c.pt")  # downloaded again, loaded
    assert server.requests == ["/gelan-c.pt"] and m.info().nc == 80


def test_the_part_file_of_a_dead_process_is_cleared(server):
    server.cache.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = server.cache / f".gelan-c.pt.{dead.pid}.part"
    stale.write_bytes(b"x" * 1000)
    old_style = server.cache / ".gelan-c.pt.k2j3h4.part"  # the mkstemp names of earlier versions
    old_style.write_bytes(b"y")
    ow.weights_path("gelan-c.pt", progress=lambda *a: None)
    assert sorted(p.name for p in server.cache.iterdir()) == ["gelan-c.pt"]


def test_a_write_failure_is_said_as_such_not_as_offline(server):
    """A file-size limit (``ulimit -f``) makes the write fail as a full disk does: the CLI names it, exit 2."""
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536));"
        "from y9cli.app import main; main(sys.argv[1:])"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code, "predict", str(TEST_DATA / "000000000009.jpg"), "-m",
                           "gelan-c.pt", "--no-save"], capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    error = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(error) == 1 and "file-size limit" in error[0] and "offline" not in error[0], proc.stderr
    assert ".gelan-c.pt." in error[0]  # the file it was writing


@pytest.mark.parametrize("command", ["predict", "reparam", "inspect", "info", "val", "train"])
def test_every_command_that_takes_a_model_file_takes_an_official_name(server, command, tmp_path):
    monkey_offline = "http://127.0.0.1:9/"  # nothing listens there: every command must say where to put the file
    os.environ[ow.URL_ENV] = monkey_offline
    image = TEST_DATA / "000000000009.jpg"
    args = {"predict": ["predict", image, "-m", "gelan-c.pt", "--no-save"],
            "reparam": ["reparam", "gelan-c.pt", tmp_path / "r.pt"],
            "inspect": ["inspect", image, "-m", "gelan-c.pt", "--rules", tmp_path / "rules.yaml"],
            "info": ["info", "gelan-c.pt"],
            "val": ["val", "--data", tmp_path / "data.yaml", "--model", "gelan-c.pt"],
            "train": ["train", "--data", tmp_path / "data.yaml", "--model", "gelan-c.pt"]}[command]  # fmt: skip
    res = y9_output(*args)
    assert res.returncode == 2, res.stderr
    assert f"put it at {server.cache / 'gelan-c.pt'}" in " ".join(res.stderr.split()), res.stderr
    try:
        y9.Model("gelan-c.pt")
    except ow.WeightsDownloadError as exc:
        api = str(exc)
    assert " ".join(res.stderr.split()) == "error: " + " ".join(api.split())  # the API's sentence, word for word


@pytest.mark.parametrize("command", ["predict", "reparam", "export", "info", "train"])
def test_a_missing_bare_model_name_gives_the_apis_sentence(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = {"predict": ["predict", TEST_DATA / "000000000009.jpg", "-m", "gelan-s.pt", "--no-save"],
            "train": ["train", "--data", shared_path("datasets", "coco8", "data.yaml"), "--model", "gelan-s.pt"],
            "reparam": ["reparam", "gelan-s.pt", tmp_path / "r.pt"],
            "export": ["export", "gelan-s.pt"],
            "info": ["info", "gelan-s.pt"]}[command]  # fmt: skip
    res = y9_output(*args)
    with pytest.raises(FileNotFoundError) as err:
        y9.Model("gelan-s.pt")
    assert res.returncode == 2 and " ".join(res.stderr.split()) == "error: " + " ".join(str(err.value).split())
    assert "Official weights by name: yolov9-t-converted.pt" in str(err.value)
