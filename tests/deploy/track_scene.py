"""A small synthetic video for the tracking tests, made of REAL image crops: three coco8 objects that the embedded
model detects (a zebra, a person, a dog; see tests/data/ATTRIBUTION.md) pasted on a grey, lightly textured
background of 320x240 pixels and moved along known straight paths.

- the zebra goes left to right along y = 60..130 and crosses the vertical counting line x = 160 once ("in");
- the person goes right to left 40 px lower and crosses the line once ("out"); the two pass over each other
  mid-way (the person is pasted over the zebra: their boxes overlap for several frames);
- the dog goes slowly right along the bottom edge and never reaches the line.
``SLOW_OBJECTS`` and ``GATE_OBJECTS`` are two other layouts of the same crops (the live-stream and the counting-gate
tests).
``Scene.truth(k)`` gives the ground-truth boxes of frame k (class, x1, y1, x2, y2) in object order.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from tests.deploy.embedded import coco8_images

W, H = 320, 240
LINE = (160.0, 0.0, 160.0, 240.0)  # x1, y1, x2, y2: zebra left->right = "in", person right->left = "out"
# (image stem suffix, label row, class id, start x, start y, px per frame in x, in y)
OBJECTS = (("34", 0, 22, 8, 60, 1.0, 0.0), ("36", 1, 0, 250, 106, -1.0, 0.0), ("42", 0, 16, 4, 175, 0.25, 0.0))
# the slow scene of the live-stream test: the zebra left to right ("in"), the dog right to left ("out"), apart
SLOW_OBJECTS = (("34", 0, 22, 70, 40, 1.0, 0.0), ("42", 0, 16, 190, 150, -1.0, 0.0))
# the counting-gate scene of the inspection tests (16 frames, 7 px per frame): the zebra left to right along the top
# ("in", crossing at frame 10), the dog right to left along the bottom ("out", at frame 6), apart
GATE_OBJECTS = (("34", 0, 22, 58, 40, 1.0, 0.0), ("42", 0, 16, 163, 150, -1.0, 0.0))
SIZE = 72  # longer side of each crop, pixels


@dataclass(frozen=True)
class Scene:
    frames: list[np.ndarray]
    boxes: np.ndarray  # (T, K, 4) ground-truth xyxy per frame and object
    classes: tuple[int, ...]

    def truth(self, k: int) -> np.ndarray:
        return np.concatenate([np.asarray(self.classes, np.float32)[:, None], self.boxes[k]], 1)

    def write(self, path: Path, fps: float) -> Path:
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (W, H))
        assert writer.isOpened(), path
        for f in self.frames:
            writer.write(f)
        writer.release()
        return path


def _crops(objects) -> list[np.ndarray]:
    images = {p.path.stem[-2:]: p for p in coco8_images()}
    out = []
    for stem, row, cls, *_ in objects:
        li = images[stem]
        assert int(li.boxes[row, 0]) == cls, (stem, li.boxes[row])
        x1, y1, x2, y2 = (int(v) for v in li.boxes[row, 1:])
        crop = li.frame[y1:y2, x1:x2]
        s = SIZE / max(crop.shape[:2])
        out.append(cv2.resize(crop, None, fx=s, fy=s, interpolation=cv2.INTER_AREA))
    return out


def make_scene(frames: int = 32, speed: float = 7.0, objects=OBJECTS) -> Scene:
    """``frames`` frames; the objects move ``speed`` px per frame times their own factor (the dog of ``OBJECTS``
    a quarter of it)."""
    crops = _crops(objects)
    rng = np.random.default_rng(0)
    background = cv2.GaussianBlur(rng.integers(90, 160, (H, W, 3), dtype=np.uint8), (0, 0), 3)
    imgs, boxes = [], np.zeros((frames, len(objects), 4), np.float32)
    for k in range(frames):
        f = background.copy()
        for j, (crop, (*_, x0, y0, vx, vy)) in enumerate(zip(crops, objects)):
            h, w = crop.shape[:2]
            x, y = int(round(x0 + vx * speed * k)), int(round(y0 + vy * speed * k))
            f[y : y + h, x : x + w] = crop
            boxes[k, j] = (x, y, x + w, y + h)
        imgs.append(f)
    return Scene(imgs, boxes, tuple(o[2] for o in objects))


def crossing_frame(scene: Scene, j: int) -> int | None:
    """The first frame whose box centre of object j is past the line x = 160 (None: never)."""
    cx = (scene.boxes[:, j, 0] + scene.boxes[:, j, 2]) / 2
    side = cx > LINE[0]
    flips = np.flatnonzero(side[1:] != side[:-1])
    return int(flips[0]) + 1 if len(flips) else None


class FrameServer:
    """MJPEG over HTTP on 127.0.0.1 (a live camera): one client gets ``frames`` at ``fps`` in real time, then the
    connection stays open ``linger`` seconds and the port closes. Bounded in time."""

    def __init__(self, frames: list[np.ndarray], fps: float, linger: float = 2.0) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.sock.settimeout(10)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/live.mjpg"
        self.thread = threading.Thread(target=self._serve, args=(frames, fps, linger), daemon=True)
        self.thread.start()

    def _serve(self, frames: list[np.ndarray], fps: float, linger: float) -> None:
        try:
            conn, _ = self.sock.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=fr\r\n\r\n")
                start = time.perf_counter()
                for k, img in enumerate(frames):
                    time.sleep(max(0.0, start + k / fps - time.perf_counter()))
                    jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
                    head = b"--fr\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpg)
                    conn.sendall(head + jpg + b"\r\n")
                time.sleep(linger)
        except OSError:
            pass
        finally:
            self.sock.close()
