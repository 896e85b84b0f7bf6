"""Inspection line: pass/fail per part from defect detections inside regions of interest.

    python samples/inspection_line.py MODEL IMAGES_DIR [--roi x1,y1,x2,y2] [--max-defects 0] [--min-conf 0.4]

Every image is one part. A part fails when more than ``--max-defects`` defects (any class, score >= --min-conf)
have their centre inside the ROI. Prints one line per part and a summary; exits 1 if any part failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2

from y9deploy import Detector
from y9deploy.pipelines.inspection.frame_rules import Rule, inspect


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("images", type=Path)
    ap.add_argument("--roi", default=None, help="x1,y1,x2,y2 in frame pixels (default: the whole frame)")
    ap.add_argument("--max-defects", type=int, default=0)
    ap.add_argument("--min-conf", type=float, default=0.4)
    args = ap.parse_args()

    roi = tuple(float(v) for v in args.roi.split(",")) if args.roi else None
    rules = [Rule("defects in ROI", roi=roi, max_count=args.max_defects, min_conf=args.min_conf)]
    paths = sorted(p for p in args.images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".bmp"))
    if not paths:
        raise SystemExit(f"{args.images}: no images (.jpg, .png, .bmp) found")
    failed = 0
    with Detector(args.model, conf=min(args.min_conf, 0.25)) as det:
        for path in paths:
            frame = cv2.imread(str(path))
            result = inspect(det.predict(frame), rules)
            failed += not result.passed
            print(f"{path.name}: {'PASS' if result.passed else 'FAIL'} {'; '.join(result.reasons)}")
    print(f"{len(paths) - failed}/{len(paths)} parts passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
