"""Sources as users type them: globs, an image URL read once (by extension or Content-Type, from a real local HTTP
server), stream URLs kept as streams, a camera that cannot be opened leaves nothing behind, a folder given where a
file is expected says so."""

from __future__ import annotations

import http.server
import json
import shutil
import threading

import pytest

from tests.conftest import TEST_DATA, run_y9
from tests.deploy.fixed_onnx import fixed_boxes_onnx
from y9deploy.pipelines.sources.kinds import content_kind, glob_root, source_roots, url_kind

JPG = TEST_DATA / "000000000036.jpg"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return fixed_boxes_onnx(tmp_path_factory.mktemp("m") / "m.onnx", [[10, 10, 4, 4]], ["a"])


class _Handler(http.server.BaseHTTPRequestHandler):
    """/x.jpg and /snapshot (no extension): the JPEG; /live: an MJPEG stream header; anything else: 404."""

    requests: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server API
        type(self).requests.append(self.path)
        if self.path in ("/x.jpg", "/snapshot"):
            body = JPG.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/live":
            self.send_response(200)
            self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
            self.end_headers()
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # fast shutdown
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_urls_are_told_apart_by_extension_then_content_type(server):
    assert url_kind("rtsp://cam.local/stream") == url_kind("rtmp://h/live") == "stream"
    assert url_kind("http://h/a/clip.MP4") == "video" and url_kind("https://h/list.m3u8") == "stream"
    assert url_kind(f"{server}/snapshot") == "image"  # asked: Content-Type image/jpeg
    assert url_kind(f"{server}/live") == "stream"  # MJPEG
    assert content_kind("video/mp4") == "video" and content_kind("application/vnd.apple.mpegurl") == "stream"
    assert content_kind("text/html") is None


@pytest.mark.parametrize("path", ["/x.jpg", "/snapshot"])
def test_an_image_url_is_one_frame_read_once(server, model, tmp_path, capsys, path):
    _Handler.requests.clear()
    url_kind.cache_clear()
    assert run_y9(["predict", f"{server}{path}", "-m", model, "--project", tmp_path, "--name", "p"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 frame (1 image, 0 videos)")
    fetched = [r for r in _Handler.requests if r == path]
    assert len(fetched) == (1 if path == "/x.jpg" else 2)  # /snapshot: once to ask its type, once to read it
    results = json.loads((tmp_path / "p" / "predictions.json").read_text())["results"]
    assert [r["source"] for r in results] == [f"{server}{path}"]
    annotated = "x.jpg" if path == "/x.jpg" else "snapshot.jpg"
    assert (tmp_path / "p" / annotated).exists()


def test_a_glob_is_expanded(model, tmp_path, capsys):
    src = tmp_path / "imgs"
    src.mkdir()
    for name in ("a.jpg", "b.jpg", "c.png"):
        shutil.copy(JPG, src / name)
    pattern = f"{src}/*.jpg"
    assert source_roots(pattern) == [src] and glob_root(f"{src}/**/x*.png") == src
    assert run_y9(["predict", pattern, "-m", model, "--project", tmp_path, "--name", "p", "--no-images"]) == 0
    assert capsys.readouterr().out.startswith("2 frames (2 images, 0 videos)")
    results = json.loads((tmp_path / "p" / "predictions.json").read_text())["results"]
    assert [r["source"] for r in results] == [str(src / "a.jpg"), str(src / "b.jpg")]
    assert run_y9(["predict", f"{src}/*.gif", "-m", model, "--project", tmp_path]) == 2
    assert f"error: no file matches {src}/*.gif" in capsys.readouterr().err
    # a run folder inside the glob's folder is refused, as for a folder source
    assert run_y9(["predict", pattern, "-m", model, "--project", src]) == 2
    assert "is inside the input folder" in capsys.readouterr().err


def test_a_camera_that_cannot_be_opened_leaves_nothing_behind(model, tmp_path, capsys):
    assert run_y9(["predict", "63", "-m", model, "--project", tmp_path]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: camera 63 could not be opened") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no run folder, no empty result files
    (tmp_path / "kept").mkdir()
    assert run_y9(["predict", "63", "-m", model, "--project", tmp_path, "--name", "kept", "--exist-ok"]) == 2
    assert list((tmp_path / "kept").iterdir()) == []  # an existing folder is kept, and stays empty


def test_a_folder_where_a_file_is_expected_says_it_is_a_folder(tmp_path, capsys):
    assert run_y9(["predict", str(JPG), "-m", tmp_path, "--no-save"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: model file {tmp_path} is a folder; expected a .engine, .onnx or .pt file."
    )
    (tmp_path / "best.pt").mkdir()
    assert run_y9(["export", tmp_path / "best.pt", "-o", tmp_path / "x.onnx"]) == 2
    assert f"checkpoint {tmp_path / 'best.pt'} is a folder" in capsys.readouterr().err
