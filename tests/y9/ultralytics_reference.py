"""Run the snippets of ``tests/y9/ultralytics_snippets.py`` under Ultralytics itself (outside ``make test``): the
same code with ``from ultralytics import YOLO`` and a model Ultralytics builds from ``yolov8n.yaml`` (random
weights, offline), which shows the snippets are its real usage. y9 runs them in ``tests/y9/test_ultralytics_snippets.py``.

    python3 -m venv /work/ulvenv && /work/ulvenv/bin/pip install torch==2.13.0 ultralytics==8.4.190
    /work/ulvenv/bin/python tests/y9/ultralytics_reference.py [--out results.json] [--only NAME ...]

Needs only the Ultralytics venv and this repository's tests/data (the coco8 images); it imports nothing of y9.
Prints one line per snippet (ok, or the error's last line) and a JSON summary; exit status 1 when one failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "y9"))

from ultralytics_snippets import SNIPPETS, make_workspace, run_snippet  # noqa: E402

HEADER = "from ultralytics import YOLO"
MODEL = "yolov8n.yaml"  # built by Ultralytics from its own config: nothing is downloaded


def torchvision_ops_or_cpu_nms() -> str:
    """torchvision's compiled ops, or where they cannot load (PyPI's torchvision wheel is built for CUDA torch; the
    CPU torch wheel has no libc10_cuda) a greedy NMS in plain torch registered as ``torchvision::nms``: the only
    torchvision op Ultralytics' detection path calls. Returns which one is in use."""
    import ctypes
    import importlib.util

    import torch

    spec = importlib.util.find_spec("torchvision")
    lib = Path(spec.origin).parent / "_C.so" if spec and spec.origin else None
    try:
        if lib is not None:
            ctypes.CDLL(str(lib))
            return "torchvision"
    except OSError:
        pass
    defs = torch.library.Library("torchvision", "DEF")  # noqa: F841 - kept alive by the module global below
    defs.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    defs.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

    def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        order = scores.argsort(descending=True)
        keep = []
        area = (boxes[:, 2] - boxes[:, 0]).clamp(min=0) * (boxes[:, 3] - boxes[:, 1]).clamp(min=0)
        while order.numel():
            i = order[0]
            keep.append(i)
            rest = order[1:]
            lt = torch.maximum(boxes[i, :2], boxes[rest, :2])
            rb = torch.minimum(boxes[i, 2:], boxes[rest, 2:])
            inter = (rb - lt).clamp(min=0).prod(1)
            iou = inter / (area[i] + area[rest] - inter + 1e-9)
            order = rest[iou <= iou_threshold]
        return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long)

    defs.impl("nms", nms, "CPU")
    globals()["_TORCHVISION_DEFS"] = defs
    import torchvision.extension

    torchvision.extension._has_ops = lambda: True
    return "plain-torch NMS (torchvision's compiled ops need CUDA torch)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the JSON summary here too")
    parser.add_argument("--only", nargs="*", help="snippet names to run (default: all)")
    args = parser.parse_args()
    nms = torchvision_ops_or_cpu_nms()
    import ultralytics

    chosen = [s for s in SNIPPETS if not args.only or s.name in args.only]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ul-ref-") as tmp:
        folder = make_workspace(Path(tmp), sorted((REPO / "tests" / "data").glob("*.jpg")))
        for snippet in chosen:
            t0 = time.perf_counter()
            try:
                run_snippet(snippet, HEADER, MODEL, folder, y9=False)
                outcome = "ok"
            except BaseException as exc:  # noqa: BLE001 - each snippet reports, the run goes on
                if isinstance(exc, KeyboardInterrupt):
                    raise
                outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                traceback.print_exc(limit=2, file=sys.stderr)
            seconds = time.perf_counter() - t0
            rows.append({"name": snippet.name, "mode": snippet.mode, "outcome": outcome, "seconds": round(seconds, 2)})
            print(f"{snippet.mode:8s} {snippet.name:20s} {outcome} ({seconds:.1f} s)", flush=True)
    summary = {"ultralytics": ultralytics.__version__, "python": sys.version.split()[0], "model": MODEL, "nms": nms,
               "ran": len(rows), "ok": sum(r["outcome"] == "ok" for r in rows), "snippets": rows}  # fmt: skip
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0 if summary["ok"] == summary["ran"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
