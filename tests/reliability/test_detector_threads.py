"""Two threads on one Detector: a call that enters while another thread is inside gets DetectorBusyError;
no call ever returns another frame's detections."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest

from tests.deploy.runtime_support import export_tiny_onnx
from y9core.errors import DetectorBusyError
from y9deploy import Detector

ROUNDS = 150


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return export_tiny_onnx(tmp_path_factory.mktemp("threads") / "tiny.onnx", imgsz=(96, 128))


def _frames(n: int) -> list[np.ndarray]:
    """Distinct frames (shifted gradients and blobs) that give distinct detections with the tiny net."""
    frames = []
    for i in range(n):
        yy, xx = np.mgrid[0:120, 0:160]
        img = np.stack([(xx * (i + 1)) % 256, (yy * 3 + 40 * i) % 256, ((xx + yy) * (i + 2)) % 256], -1)
        img = img.astype(np.uint8)
        cv2.circle(img, (30 + 25 * i, 60), 18 + 3 * i, (255, 255, 255), -1)
        frames.append(img)
    return frames


def _rows(dets) -> np.ndarray:
    return np.concatenate([dets.xyxy, dets.confidence[:, None], dets.class_id[:, None]], 1)


def test_two_threads_never_get_wrong_results(model):
    frames = _frames(4)
    det = Detector(model, device="cpu", conf=0.05)
    expected = [_rows(det.predict(f)) for f in frames]
    assert len({e.tobytes() for e in expected}) == len(frames)  # every frame has its own answer
    counts = {"ok": 0, "busy": 0}
    wrong: list[str] = []
    barrier = threading.Barrier(2)
    lock = threading.Lock()

    def worker(offset: int) -> None:
        for r in range(ROUNDS):
            k = (r + offset) % len(frames)
            barrier.wait()  # both threads enter predict at the same moment
            try:
                got = _rows(det.predict(frames[k]))
            except DetectorBusyError as exc:
                assert str(model) in str(exc) and "one thread at a time" in str(exc)
                with lock:
                    counts["busy"] += 1
                continue
            with lock:
                counts["ok"] += 1
                if got.shape != expected[k].shape or not np.array_equal(got, expected[k]):
                    wrong.append(f"round {r} frame {k}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    det.close()
    assert wrong == []
    assert counts["ok"] + counts["busy"] == 2 * ROUNDS
    assert counts["ok"] >= ROUNDS  # at least one of each pair of simultaneous calls ran
    assert counts["busy"] > 0  # and the calls really did collide


def test_an_open_stream_keeps_other_threads_out_until_closed(model):
    frames = _frames(3)
    det = Detector(model, device="cpu", conf=0.05)
    expected = _rows(det.predict(frames[2]))
    stream = det.predict_stream([frames[:1], frames[1:2]])
    next(stream)  # thread A is inside predict_stream until the stream ends or is closed
    result: dict[str, object] = {}

    def other() -> None:
        try:
            result["dets"] = det.predict(frames[2])
        except DetectorBusyError as exc:
            result["error"] = exc

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert "predict_stream()" in str(result.get("error")), result
    assert np.array_equal(_rows(det.predict(frames[2])), expected)  # the stream's own thread may re-enter
    stream.close()
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert np.array_equal(_rows(result["dets"]), expected)
    det.close()
