"""Drone video: sliced (tiled) inference of every n-th frame, so small objects in large frames stay visible, with
tracking and line counting.

    python samples/drone_video.py MODEL VIDEO_OR_STREAM [--stride 2] [--tile 640] [--out out.mp4]
                                  [--track bytetrack|botsort] [--count-line x1,y1,x2,y2 ...]

Each frame is cut into overlapping tiles at the model's input size (no down-scaling of small objects), plus the
whole frame for large objects; the detections are merged by NMS in frame pixels. With ``--track`` each object
keeps one id across frames (botsort also compensates the drone's own motion) and ``--count-line`` counts the
tracks crossing each line, in and out per class; the totals are printed at the end.
"""

from __future__ import annotations

import argparse
import time

import cv2

from y9deploy import Detector
from y9deploy.draw import draw_detections
from y9deploy.pipelines.sources.frame_reader import VideoReader
from y9deploy.pipelines.tiling import predict_tiled
from y9deploy.tracking.counting import CountLine
from y9deploy.tracking.source_tracking import SourceTracking, TrackOptions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("source", help="a video file, a stream URL or a camera index")
    ap.add_argument("--stride", type=int, default=1, help="process every n-th frame")
    ap.add_argument("--tile", type=int, default=None, help="tile size (default: the model's input size)")
    ap.add_argument("--overlap", type=float, default=0.2)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--max-frames", type=int, default=None)
    ap.add_argument("--out", default=None, help="annotated video (.mp4)")
    ap.add_argument("--track", choices=["bytetrack", "botsort"], default=None, help="track objects across frames")
    ap.add_argument("--count-line", action="append", default=[], help="x1,y1,x2,y2: count tracks crossing it")
    args = ap.parse_args()
    lines = tuple(CountLine.parse(text) for text in args.count_line)

    source = int(args.source) if args.source.isdigit() else args.source
    writer = None
    with (
        Detector(args.model, conf=args.conf) as det,
        VideoReader(source, stride=args.stride, max_frames=args.max_frames) as video,
    ):
        tracking = None
        if args.track or lines:
            tracking = SourceTracking(TrackOptions(args.track or "bytetrack", lines), fps=video.fps)
        t0, n = time.perf_counter(), 0
        for index, frame in video:
            dets = predict_tiled(det, frame, tile=args.tile, overlap=args.overlap)
            n += 1
            counts = {}
            for c in dets.class_id:
                counts[dets.names[c]] = counts.get(dets.names[c], 0) + 1
            if tracking is not None:  # the frame's time is its place in the video: index / fps
                tracked = tracking.step(dets, index / video.fps, frame)
                ids = sorted(set(tracked.track_id.tolist()) - {-1})
                print(f"frame {index}: {len(dets)} objects {counts}, tracks {ids}")
            else:
                print(f"frame {index}: {len(dets)} objects {counts}")
            if args.out:
                if writer is None:
                    h, w = frame.shape[:2]
                    writer = cv2.VideoWriter(args.out, cv2.VideoWriter_fourcc(*"mp4v"), 25, (w, h))
                writer.write(tracking.draw(frame, tracked) if tracking is not None else draw_detections(frame, dets))
        if writer is not None:
            writer.release()
        print(f"{n} frames in {time.perf_counter() - t0:.1f} s")
        for line in tracking.summary().sentences() if tracking is not None else []:
            print(line)


if __name__ == "__main__":
    main()
