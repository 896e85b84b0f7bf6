"""The video pipeline: JSON lines equal per-frame Detector.predict; a local MJPEG-over-HTTP stream that is cut
and comes back is reconnected (counted); ``latest`` drops frames behind a slow Detector, ``queue`` none; a refused
stream is reported as refused."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx
from y9core.errors import SourceError
from y9deploy import Detector
from y9deploy.pipelines.predict.results import read_jsonl
from y9deploy.pipelines.predict.run import predict_source
from y9deploy.pipelines.sources.frame_reader import FrameReader, ReconnectPolicy, VideoReader

IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128))


def write_video(path: Path, n: int, size=(160, 120)) -> Path:
    """A video of ``n`` frames made from the dataset images (shifted so that every frame differs)."""
    fourcc = "MJPG" if path.suffix == ".avi" else "mp4v"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 10, size)
    bases = [cv2.resize(cv2.imread(str(p)), size) for p in IMAGES]
    for k in range(n):
        writer.write(np.roll(bases[k % 2], 6 * k, axis=1))
    writer.release()
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MjpegServer:
    """MJPEG over HTTP on 127.0.0.1: each of ``connections`` clients gets ``frames`` frames (grey level = running
    frame number * 8), then the connection is cut; after the last one the port is closed. Bounded in time."""

    def __init__(self, connections: int, frames: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.sock.settimeout(10)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/video.mjpg"
        self.served = 0
        self.thread = threading.Thread(target=self._serve, args=(connections, frames), daemon=True)
        self.thread.start()

    def _serve(self, connections: int, frames: int) -> None:
        try:
            for _ in range(connections):
                conn, _ = self.sock.accept()
                with conn:
                    conn.recv(4096)
                    conn.sendall(
                        b"HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=fr\r\n\r\n"
                    )
                    for _ in range(frames):
                        img = np.full((96, 128, 3), 8 * self.served, np.uint8)
                        jpg = cv2.imencode(".jpg", img)[1].tobytes()
                        head = b"--fr\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpg)
                        conn.sendall(head + jpg + b"\r\n")
                        self.served += 1
                        time.sleep(0.01)
                    time.sleep(0.1)
        except OSError:
            pass
        finally:
            self.sock.close()


def test_video_json_lines_equal_per_frame_predict(tiny, tmp_path):
    video = write_video(tmp_path / "clip.avi", 9)
    out = tmp_path / "out"
    from y9cli.app import app

    res = CliRunner().invoke(app, ["predict", str(video), "-m", str(tiny), "--conf", "0.5", "--project", str(tmp_path),
                                   "--name", "out", "--batch", "4"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = read_jsonl(out / "predictions.jsonl")
    assert [r["frame"] for r in lines] == list(range(9))
    assert all(set(r["timing_ms"]) == {"decode", "infer", "latency"} for r in lines)
    with Detector(tiny, conf=0.5) as det, VideoReader(video) as frames:
        total = 0
        for (index, frame), rec in zip(frames, lines):
            want = det.predict(frame)
            got = rec["detections"]
            total += len(got)
            assert rec["frame"] == index and len(got) == len(want)
            np.testing.assert_allclose(
                np.array([d["xyxy"] for d in got]).reshape(-1, 4), want.xyxy, atol=1e-3
            )
            assert [d["class_id"] for d in got] == want.class_id.tolist()
        assert total > 0
    assert json.loads((out / "predictions.json").read_text())["results"] == lines


def test_stream_cut_is_reconnected_and_counted():
    server = MjpegServer(connections=2, frames=6)
    events: list[str] = []
    with FrameReader(server.url, policy="queue", max_frames=12, on_event=events.append,
                     reconnect=ReconnectPolicy(attempts=5, initial_s=0.05)) as reader:  # fmt: skip
        frames = list(reader)
    assert [f.index for f in frames] == list(range(12))  # indices go on across the reconnect
    grey = [int(round(f.image.mean() / 8)) for f in frames]
    assert grey == list(range(12))  # every frame of both connections, in order
    assert reader.stats.reconnects == 1 and reader.stats.dropped == 0
    assert any(server.url in e and e.startswith("lost") for e in events)
    assert any(e.startswith(f"reconnected to {server.url}") for e in events)
    server.thread.join(5)


def test_stream_through_predict_source_and_giving_up_names_the_reason(tiny, tmp_path):
    server = MjpegServer(connections=2, frames=5)
    warnings: list[str] = []
    with pytest.raises(SourceError, match="gave up on http://127.0.0.1"):
        predict_source(server.url, tiny, save_dir=tmp_path / "out", policy="queue", on_warning=warnings.append,
                       reconnect=ReconnectPolicy(attempts=2, initial_s=0.05))  # fmt: skip
    lines = read_jsonl(tmp_path / "out" / "predictions.jsonl")
    assert [r["frame"] for r in lines] == list(range(10))  # the frames before the end are all on disk
    assert all("captured" in r for r in lines)
    assert any("connection refused" in w and server.url in w for w in warnings)  # the port is closed now


def test_refused_stream_is_reported_as_refused(tiny):
    url = f"rtsp://127.0.0.1:{free_port()}/live"
    with pytest.raises(SourceError) as err:
        FrameReader(url)
    msg = str(err.value)
    assert url in msg and "connection refused" in msg and "codec" not in msg
    from y9cli.app import app

    res = CliRunner().invoke(app, ["predict", url, "-m", str(tiny)])
    assert isinstance(res.exception, SourceError) and "connection refused" in str(res.exception)


class SlowDetector:
    """A real Detector that takes ``delay`` seconds longer per call (a slow model)."""

    def __init__(self, det: Detector, delay: float) -> None:
        self.det, self.delay, self.names, self.path = det, delay, det.names, det.path

    def predict(self, frames, **kw):
        time.sleep(self.delay)
        return self.det.predict(frames, **kw)


def test_latest_drops_frames_behind_a_slow_detector_queue_drops_none(tiny, tmp_path):
    video = write_video(tmp_path / "long.avi", 60)
    with Detector(tiny) as det:
        slow = SlowDetector(det, 0.02)
        latest = predict_source(video, slow, save_dir=tmp_path / "latest", policy="latest", save_images=False)
        queue = predict_source(video, slow, save_dir=tmp_path / "queue", policy="queue", save_images=False)
    assert latest.dropped > 0 and latest.frames + latest.dropped == 60 and latest.frames < 60
    seen = [r["frame"] for r in read_jsonl(tmp_path / "latest" / "predictions.jsonl")]
    assert seen == sorted(seen) and len(set(seen)) == len(seen) and seen[-1] == 59  # the newest frame wins
    assert queue.dropped == 0 and queue.frames == 60
    assert [r["frame"] for r in read_jsonl(tmp_path / "queue" / "predictions.jsonl")] == list(range(60))


def test_folder_of_frames_and_stop(tmp_path):
    for k in range(5):
        cv2.imwrite(str(tmp_path / f"f{k:03d}.png"), np.full((32, 48, 3), 40 * k, np.uint8))
    (tmp_path / "f002.png").write_bytes(b"not a png")
    with FrameReader(tmp_path, on_event=lambda m: None) as reader:
        frames = list(reader)
    assert reader.policy == "queue" and [f.index for f in frames] == [0, 1, 3, 4]
    assert [Path(f.name).name for f in frames] == ["f000.png", "f001.png", "f003.png", "f004.png"]
    assert len(reader.stats.skipped) == 1 and "f002.png" in reader.stats.skipped[0][0]
    server = MjpegServer(connections=1, frames=200)
    reader = FrameReader(server.url)
    assert reader.policy == "latest"
    first = reader.get(timeout=5)
    assert first is not None
    t = time.perf_counter()
    reader.stop()  # graceful: the thread ends promptly although the stream goes on
    assert not reader.reading and time.perf_counter() - t < 3
    with pytest.raises(ValueError, match="policy"):
        FrameReader(tmp_path, policy="newest")
