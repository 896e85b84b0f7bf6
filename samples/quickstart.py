"""Quickstart: detect objects in an image with any y9 model file (.engine, .onnx or .pt).

python samples/quickstart.py MODEL IMAGE [--conf 0.25] [--out annotated.jpg]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2

from y9core.images.write import write_image
from y9deploy import Detector
from y9deploy.draw import draw_detections


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--out", default="annotated.jpg")
    args = ap.parse_args()

    frame = cv2.imread(args.image)  # HxWx3 uint8 BGR
    if frame is None:
        raise SystemExit(f"{args.image}: not an image OpenCV can read")
    with Detector(args.model, conf=args.conf) as det:
        dets = det.predict(frame)
    for box, score, cls in zip(dets.xyxy, dets.confidence, dets.class_id):
        x1, y1, x2, y2 = (round(float(v)) for v in box)
        print(f"{dets.names[cls]:>14s} {score:.2f}  ({x1}, {y1}) - ({x2}, {y2})")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_image(out, draw_detections(frame, dets))  # atomically; an error names the file (cv2.imwrite says nothing)
    print(f"{len(dets)} detections; annotated image written to {args.out}")


if __name__ == "__main__":
    main()
