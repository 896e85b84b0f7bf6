"""Detector + benchmark on an NVIDIA GPU: the PyTorch and onnxruntime-gpu backends, 1080p frames -> Detections.

    PYTHONPATH=. python benchmarks/bench_detector_gpu.py --out "$OUT"          # the H200 run (defaults below)
    PYTHONPATH=. python benchmarks/bench_detector_gpu.py --device cpu --model gelan-t --imgsz 160 \
        --batches 1,2 --iters 3 --warmup 1 --no-half --out /tmp/smoke                # a CPU smoke test
    PYTHONPATH=. python benchmarks/bench_detector_gpu.py --stream --compile --out "$OUT"  # only the nms and
                                                                     # stream steps (+ compiled stream)

Needs only this repository (y9deploy, y9train), torch, onnx, onnxconverter-common (FP16 ONNX) and, for the
onnxruntime rows, onnxruntime-gpu; optional inputs are passed as arguments (--checkpoint, --frames).

What it does:
1. a yolov9-s (``--model``) with fixture-like random weights (the rule of ../shared/fixtures/official/README.md:
   per-tensor PCG64(crc32(key)) draws; DFL weights fixed), its BatchNorm statistics re-estimated on letterboxed
   frames (train-mode passes, momentum=None), saved as a y9 checkpoint; or ``--checkpoint``;
2. an FP16 ONNX export with a dynamic batch (one file for every batch size);
3. a confidence threshold picked so that ~``--candidates`` anchors per frame pass it (a trained model on a busy
   scene: a few hundred), so NMS does realistic work on random weights;
4. ``y9deploy.benchmark`` for: torch FP16 + CUDA graphs with the Detector's defaults (hybrid pre-processing:
   OpenCV letterbox, uint8 upload, normalisation on the GPU; host NMS up to 8 frames, GPU NMS above) at
   batches ``--batches``; the same eager (no CUDA graph) at batch 1; the other pre-processing placements
   (whole blob on the CPU; whole frames letterboxed on the GPU) and post-processing placements (GPU, host)
   at the smallest and largest batch; onnxruntime-gpu FP16; torch at batch 1 with 30 ms idle gaps (camera loop); with ``--compile`` also
   torch.compile'd torch (inductor kernels, then CUDA graphs) at the smallest and largest batch;
5. the network alone (``backend.infer`` on a device tensor, CUDA events) for both backends at batch 1 and max;
6. torch vs onnxruntime detections on a few frames (counts, matched box distance);
7. step ``nms``: the batched GPU post-processing alone on the real raw output at the largest batch, with the
   Triton scan and with the fixed point, at ~``--candidates`` and ~4x as many candidates per frame: ms per
   call, and whether each result equals the host ``postprocess`` bit for bit (``equal_to_host``);
8. step ``stream``: ``Detector.predict_stream`` (the letterbox of batch i+1 overlapping the GPU work of batch
   i) at ``--stream-batches`` (32, 64), mode "stream" in the JSON; with ``--compile`` also compiled.
9. step ``graph``: with one Detector (so one network output), the detections of the default GPU path
   (post-processing replayed as CUDA graphs, ``post.graph``) against the eager GPU post-processing and
   the host ``postprocess``, at batch 1 and the largest batch, in ``predict`` and ``predict_stream``: whether
   they are equal bit for bit (``summary.json`` ``graph_agree``).
``--stream`` runs only steps 1, 3, 7 and 8.
Every step runs in its own try/except: a failure is recorded in summary.json and the run goes on.
Writes ``bench_<name>.json`` (y9 benchmark JSON, comparable with ``y9 benchmark --compare``) and
``summary.json`` under ``--out`` (the checkpoint and ONNX under ``--work``), and prints a short table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from random_weights import fixture_like_weights, reestimate_bn  # noqa: E402 - beside this script


def load_frames(args) -> list[np.ndarray]:
    from y9deploy.measure.bench import synthetic_frame
    from y9deploy.runtime.image_file import read_image

    if args.frames:
        paths = []
        for p in args.frames:
            p = Path(p)
            paths += (
                sorted(q for q in p.iterdir() if q.suffix.lower() in (".jpg", ".jpeg", ".png"))
                if p.is_dir()
                else [p]
            )
        import cv2

        h, w = args.frame_hw
        return [cv2.resize(read_image(p), (w, h)) for p in paths[:16]]
    return [synthetic_frame(*args.frame_hw, seed=s) for s in range(16)]


def pick_conf(det, frames, candidates: int) -> float:
    """The score that ``candidates`` anchors per frame exceed (median over frames)."""
    from y9deploy.pre.host import prepare

    blob, _ = prepare(frames[:8], det.imgsz, dtype=det.backend.input_dtype)
    on_host = str(det.pipeline.pre) == "host"
    out = det.backend.infer(blob if on_host else _to_device(blob, det))["output0"]
    out = out.float().cpu().numpy() if hasattr(out, "cpu") else np.asarray(out, np.float32)
    best = np.sort(out[:, 4:].max(1), axis=1)[:, ::-1]
    return float(np.median(best[:, min(candidates, best.shape[1] - 1)]))


def _to_device(blob, det):
    import torch

    return torch.from_numpy(blob).to(det.device)


def network_only(det, batch: int, iters: int) -> dict:
    """img/s and ms per call of backend.infer alone on a device tensor (CUDA events) or host array (CPU)."""
    import torch

    h, w = det.imgsz
    dtype = torch.float16 if det.backend.input_dtype == np.float16 else torch.float32
    cuda = det.device.startswith("cuda")
    x = (
        torch.rand((batch, 3, h, w), device=det.device).to(dtype)
        if cuda
        else np.random.rand(batch, 3, h, w).astype(det.backend.input_dtype)
    )
    for _ in range(5):
        det.backend.infer(x)
    if cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            det.backend.infer(x)
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end) / iters
    else:
        t0 = time.perf_counter()
        for _ in range(iters):
            det.backend.infer(x)
        ms = (time.perf_counter() - t0) * 1000 / iters
    return {"batch": batch, "ms_per_call": ms, "img_per_s": batch * 1000.0 / ms}


def compare_detections(a_list, b_list) -> dict:
    counts, dist = [], []
    for a, b in zip(a_list, b_list):
        counts.append([len(a), len(b)])
        if len(a) and len(b):
            d = np.abs(a.xyxy[:, None, :] - b.xyxy[None]).max(2).min(1)
            dist.append(float(np.median(d)))
    return {"counts_torch_vs_ort": counts, "median_matched_box_px": dist}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")))
    ap.add_argument(
        "--work", type=Path, default=Path("/tmp/y9-bench-work"), help="checkpoint and ONNX go here"
    )
    ap.add_argument("--model", default="yolov9-s")
    ap.add_argument("--checkpoint", type=Path, default=None, help="use this .pt instead of random weights")
    ap.add_argument("--frames", nargs="*", default=None, help="images or folders (resized to --frame)")
    ap.add_argument("--frame", default="1080x1920", help="frame size HxW")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batches", default="1,32,64")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--candidates", type=int, default=500)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-half", action="store_true")
    ap.add_argument(
        "--compile", action="store_true", help="also torch.compile (inductor) at batch 1 and max (minutes)"
    )
    ap.add_argument(
        "--skip",
        default="",
        help="comma-separated steps to skip: torch,eager,cpu-pre,gpu-pre,post-gpu,post-cpu,ort,idle,net,agree,nms,stream,graph",
    )
    ap.add_argument(
        "--stream", action="store_true", help="only the nms and stream steps (and what they need)"
    )
    ap.add_argument("--stream-batches", default="32,64", help="batch sizes of the stream step")
    args = ap.parse_args()
    args.frame_hw = tuple(int(v) for v in args.frame.lower().split("x"))
    batches = [int(b) for b in args.batches.split(",")]
    skip = set(filter(None, args.skip.split(",")))
    if args.stream:
        skip |= {
            "torch",
            "eager",
            "cpu-pre",
            "gpu-pre",
            "post-gpu",
            "post-cpu",
            "ort",
            "idle",
            "net",
            "agree",
        }
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    half = not args.no_half
    summary: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "errors": {}, "runs": {}}

    def step(name, fn):
        if name in skip:
            return None
        t0 = time.perf_counter()
        try:
            value = fn()
            print(f"[{name}] done in {time.perf_counter() - t0:.1f} s", flush=True)
            return value
        except Exception as exc:  # noqa: BLE001 - one failed configuration must not end the run
            summary["errors"][name] = f"{type(exc).__name__}: {exc}"
            print(f"[{name}] FAILED: {type(exc).__name__}: {exc}\n{traceback.format_exc()}", flush=True)
            return None

    import torch

    try:
        import onnxruntime

        onnxruntime.preload_dlls()  # CUDA/cuDNN from the nvidia-* wheels torch uses (onnxruntime >= 1.21)
    except Exception as exc:  # noqa: BLE001
        print(f"onnxruntime preload: {exc}")
    from y9deploy import Detector
    from y9deploy.measure.bench import benchmark
    from y9deploy.measure.doctor import diagnose, report_dict

    report = diagnose()
    summary["doctor"] = report_dict(report)
    print(report.summary, [f"{g.name} {g.compute_capability}" for g in report.gpus], flush=True)
    frames = load_frames(args)

    def make_checkpoint() -> Path:
        from y9deploy.pre.host import prepare
        from y9train.checkpoints.load import save_checkpoint
        from y9train.models import build_model

        if args.checkpoint:
            return args.checkpoint
        model = build_model(args.model)
        fixture_like_weights(model)
        blob, _ = prepare(frames, args.imgsz)
        reestimate_bn(model, [blob[:8], blob[8:]], args.device)
        return save_checkpoint(model, args.work / f"{args.model}.pt")

    pt = step("checkpoint", make_checkpoint)
    if pt is None:
        print(json.dumps(summary["errors"], indent=2))
        return 1

    def export() -> Path:
        from y9deploy.export.onnx_export import export_onnx_report

        res = export_onnx_report(pt, args.work / f"{args.model}{'-fp16' if half else ''}.onnx", imgsz=args.imgsz,
                                 half=half, dynamic_batch=True, check=False)  # fmt: skip
        summary["export"] = {"path": str(res.path), "seconds": res.seconds, "notes": res.notes}
        return res.path

    onnx_path = step("export", export) if "ort" not in skip else None
    dev = args.device
    kw_torch = dict(device=dev, half=half if dev.startswith("cuda") else False, imgsz=args.imgsz)

    def calibrate() -> float:
        with Detector(pt, **kw_torch) as det:
            return pick_conf(det, frames, args.candidates)

    conf = step("conf", calibrate) or 0.25
    summary["conf"] = conf
    print(f"conf {conf:.4f} (~{args.candidates} candidates per frame)", flush=True)
    common = dict(iters=args.iters, warmup=args.warmup, frames=frames, conf=conf)

    def run(name, path, sizes, **kw):
        res = benchmark(path, batch_sizes=sizes, **common, **kw)
        res.save(args.out / f"bench_{name}.json")
        summary["runs"][name] = res.to_dict()["cases"]
        return res

    step("torch", lambda: run("torch", pt, batches, **kw_torch))
    step("eager", lambda: run("torch_eager", pt, [batches[0]], cuda_graph=False, **kw_torch))
    ends = sorted({batches[0], max(batches)})
    step("cpu-pre", lambda: run("torch_cpu_pre", pt, ends, preprocess="cpu", **kw_torch))
    step("gpu-pre", lambda: run("torch_gpu_pre", pt, ends, preprocess="gpu", **kw_torch))
    step("post-gpu", lambda: run("torch_post_gpu", pt, ends, postprocess="gpu", **kw_torch))
    step("post-cpu", lambda: run("torch_post_cpu", pt, [max(batches)], postprocess="cpu", **kw_torch))
    if onnx_path is not None:
        step("ort", lambda: run("onnxruntime", onnx_path, batches, device=dev))
    step("idle", lambda: run("torch_idle30", pt, [1], idle_ms=30.0, **kw_torch))
    if args.compile and not args.stream:
        step(
            "compiled",
            lambda: run("torch_compiled", pt, [batches[0], max(batches)], compile=True, **kw_torch),
        )
    from nms_gpu_check import nms_check  # beside this script

    step("nms", lambda: nms_check(pt, frames, max(batches), args.candidates, kw_torch, summary))
    sb = [int(b) for b in args.stream_batches.split(",")]
    step("stream", lambda: run("torch_stream", pt, sb, stream=True, **kw_torch))
    if args.compile:
        step(
            "stream-compiled",
            lambda: run("torch_stream_compiled", pt, sb, stream=True, compile=True, **kw_torch),
        )
    from y9core.post.choice import PostImpl, choose_post, failure, probe

    summary["nms_scan"] = {
        "triton_ready": choose_post(device="cuda", torch_tensors=True, triton=probe().triton, graphs=False)
        is PostImpl.TORCH_TRITON,
        "triton_error": failure(PostImpl.TORCH_TRITON),
        "graph_error": failure(PostImpl.GRAPH),
    }

    def net():
        out = {}
        with Detector(pt, **kw_torch) as det:
            out["torch"] = [network_only(det, b, 50) for b in (1, max(batches))]
        if onnx_path is not None:
            with Detector(onnx_path, device=dev) as det:
                out["onnxruntime"] = [network_only(det, b, 50) for b in (1, max(batches))]
        summary["network_only"] = out

    step("net", net)

    def graph_agree():
        def same(xs, ys):
            return all(
                np.array_equal(x.xyxy, y.xyxy)
                and np.array_equal(x.confidence, y.confidence)
                and np.array_equal(x.class_id, y.class_id)
                for x, y in zip(xs, ys, strict=True)
            )

        from dataclasses import asdict

        from y9deploy.runtime.gpu_pipeline import GpuPipeline

        out = {}
        with Detector(pt, conf=conf, **kw_torch) as det:
            pipe = det.pipeline
            if not isinstance(pipe, GpuPipeline):
                raise RuntimeError(f"{det.device}: no GPU pipeline, nothing to compare")
            out["post_impl"] = str(pipe.post)
            sizes = sorted({1, max(batches)})
            fr = {b: [frames[i % len(frames)] for i in range(b)] for b in sizes}
            got = {b: det.predict(fr[b]) for b in sizes}
            streamed = {b: [d for r in det.predict_stream([fr[b], fr[b][::-1]]) for d in r] for b in sizes}
            graph = pipe.post_runner.graph
            out["graph_post_stats"] = asdict(graph.stats) if graph is not None else None
            out["post_impl_after"] = str(pipe.post)  # a fallback while running shows here
            det.pipeline = GpuPipeline(det.backend, det.info, stream=pipe.stream, graph_post=False)
            out["eager_post_impl"] = str(det.pipeline.post)
            eager = {b: det.predict(fr[b]) for b in sizes}
            det.pipeline = GpuPipeline(det.backend, det.info, stream=pipe.stream, post="cpu")
            host = {b: det.predict(fr[b]) for b in sizes}
            for b in sizes:
                out[str(b)] = {
                    "detections": sum(len(d) for d in got[b]),
                    "equal_to_eager_gpu": same(got[b], eager[b]),
                    "equal_to_host": same(got[b], host[b]),
                    "stream_equal_to_host": same(streamed[b], host[b] + host[b][::-1]),
                }
        summary["graph_agree"] = out
        print("graph post agreement:", json.dumps(out), flush=True)

    step("graph", graph_agree)

    def agree():
        with Detector(pt, conf=conf, **kw_torch) as a, Detector(onnx_path, conf=conf, device=dev) as b:
            summary["agreement"] = compare_detections(a.predict(frames[:4]), b.predict(frames[:4]))

    if onnx_path is not None:
        step("agree", agree)
    summary["torch_cuda"] = {"version": torch.__version__, "cuda": torch.version.cuda}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")

    print(f"\n{'run':<22}{'backend':<13}{'batch':>6}{'pre p50':>9}{'infer p50':>10}{'post p50':>9}"
          f"{'e2e p50':>9}{'e2e p99':>9}{'img/s':>9}")  # fmt: skip
    for name, cases in summary["runs"].items():
        for c in cases:
            s = c["stages"]
            print(f"{name:<22}{c['backend']:<13}{c['batch']:>6}{s['pre']['p50']:>9.2f}{s['infer']['p50']:>10.2f}"
                  f"{s['post']['p50']:>9.2f}{s['e2e']['p50']:>9.2f}{s['e2e']['p99']:>9.2f}{c['img_per_s']:>9.0f}")  # fmt: skip
    for backend, rows in summary.get("network_only", {}).items():
        for r in rows:
            print(
                f"network only          {backend:<13}{r['batch']:>6}{'':>28}{r['ms_per_call']:>9.2f}{'':>9}{r['img_per_s']:>9.0f}"
            )
    if summary.get("agreement"):
        print("torch vs onnxruntime:", json.dumps(summary["agreement"]))
    if summary["errors"]:
        print("errors:", json.dumps(summary["errors"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
