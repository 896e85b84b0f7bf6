"""Official weights by name (issue 44, "Done when" line 2): ``y9.Model("gelan-c.pt")`` and ``-m gelan-c.pt`` download
the release file once into the cache, checked against its pinned sha256, written atomically, loaded by the safe
loader; a wrong digest is refused; offline, one sentence says where to put the file. The release is served by a
local HTTP server on 127.0.0.1 (no test touches the internet), its file an official-format checkpoint of ../shared."""

from __future__ import annotations

import hashlib
import http.server
import threading
from functools import partial

import pytest

import y9
from tests.conftest import TEST_DATA, shared_path, y9_output
from y9deploy.model_file import official_weights as ow


@pytest.fixture
def release(tmp_path, monkeypatch):
    """A local 'release' serving gelan-c.pt (an official-format gelan-t checkpoint) and counting its requests."""
    served = tmp_path / "release"
    served.mkdir()
    payload = shared_path("fixtures", "official", "gelan-t-converted-official-format.pt").read_bytes()
    (served / "gelan-c.pt").write_bytes(payload)
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # fast shutdown
    thread.start()
    cache = tmp_path / "cache"
    monkeypatch.setenv(ow.URL_ENV, f"http://127.0.0.1:{server.server_port}/")
    monkeypatch.setenv(ow.DIR_ENV, str(cache))
    digest = hashlib.sha256(payload).hexdigest()
    monkeypatch.setitem(ow.OFFICIAL, "gelan-c.pt", ow.OfficialWeights("gelan-c.pt", digest))
    monkeypatch.chdir(tmp_path)
    yield {"cache": cache, "requests": requests, "digest": digest, "port": server.server_port}
    server.shutdown()
    server.server_close()


def test_weights_by_name_download_once_check_and_load_safely(release):
    seen = []
    path = ow.weights_path("gelan-c.pt", progress=lambda done, total: seen.append((done, total)))
    assert path == release["cache"] / "gelan-c.pt" and release["requests"] == ["/gelan-c.pt"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == release["digest"]
    assert seen and seen[-1][0] == seen[-1][1] == path.stat().st_size  # progress reported to the end
    assert sorted(p.name for p in release["cache"].iterdir()) == ["gelan-c.pt"]  # no partial file left
    m = y9.Model("gelan-c.pt")  # the cached file: no second download
    assert release["requests"] == ["/gelan-c.pt"] and m.kind == "checkpoint" and m.path == path
    info = m.info()  # read by the restricted unpickler (official format)
    assert info.nc == 80 and info.params > 0
    res = y9_output("predict", TEST_DATA / "000000000009.jpg", "-m", "gelan-c.pt", "--no-save")
    assert res.returncode == 0, res.stderr
    assert release["requests"] == ["/gelan-c.pt"] and "demonstration model" not in res.stderr


def test_a_download_whose_sha256_is_not_the_pinned_one_is_refused(release, monkeypatch):
    monkeypatch.setitem(ow.OFFICIAL, "gelan-c.pt", ow.OfficialWeights("gelan-c.pt", "0" * 64))
    with pytest.raises(ow.WeightsDownloadError, match=rf"has sha256 {release['digest']}, not the pinned 0{{64}}; "
                                                      "refused"):  # fmt: skip
        y9.Model("gelan-c.pt")
    assert list(release["cache"].iterdir()) == []  # nothing kept, nothing half-written
    res = y9_output("predict", TEST_DATA / "000000000009.jpg", "-m", "gelan-c.pt", "--no-save")
    assert res.returncode == 2 and "not the pinned" in res.stderr and res.stderr.count("error:") == 1


def test_offline_says_the_url_and_where_to_put_the_file(release, monkeypatch):
    monkeypatch.setenv(ow.URL_ENV, "http://127.0.0.1:9/")  # nothing listens there
    target = release["cache"] / "gelan-c.pt"
    with pytest.raises(ow.WeightsDownloadError) as err:
        ow.weights_path("gelan-c.pt")
    assert str(err.value).startswith("cannot download gelan-c.pt from http://127.0.0.1:9/gelan-c.pt (")
    assert str(err.value).endswith(f"put it at {target} (or pass the file's path instead of its name).")
    assert not target.exists()


def test_names_that_are_files_or_not_official_are_left_alone(release):
    (release["cache"].parent / "gelan-c.pt").write_bytes(b"a local file of that name wins")
    assert ow.weights_path("gelan-c.pt") == ow.Path("gelan-c.pt") and release["requests"] == []
    assert ow.weights_path("runs/best.pt") == ow.Path("runs/best.pt")
    with pytest.raises(FileNotFoundError, match=r"model file gelan-x.pt does not exist. Official weights by name: "):
        y9.Model("gelan-x.pt")
    with pytest.raises(ValueError, match="is not 64 lower-case hex digits"):
        ow.OfficialWeights("a.pt", "abc")


def test_a_file_without_a_pinned_digest_is_taken_with_one_warning_naming_its_digest(release, monkeypatch):
    monkeypatch.setitem(ow.OFFICIAL, "gelan-c.pt", ow.OfficialWeights("gelan-c.pt"))  # not pinned (as shipped today)
    res = y9_output("predict", TEST_DATA / "000000000009.jpg", "-m", "gelan-c.pt", "--no-save")
    assert res.returncode == 0, res.stderr
    assert (f"warning: gelan-c.pt: no sha256 is pinned for this file in y9; the download's is {release['digest']}"
            in " ".join(res.stderr.split()))  # fmt: skip
    assert "UserWarning" not in res.stderr and (release["cache"] / "gelan-c.pt").is_file()
