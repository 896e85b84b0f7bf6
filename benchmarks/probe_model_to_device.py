"""Where the training start's "model" phase goes on a GPU (issue 48: 4.4-5.3 s there, 0.8 s on a CPU).

    python benchmarks/probe_model_to_device.py [--model yolov9-s] [--device 0]

Prints one line per step, each synchronised: CUDA's context, the first allocation, the first kernel, the network
built on the CPU, moved to the device as float32, its channels-last copy, the same for a second network (warm).
"""

from __future__ import annotations

import argparse
import json
import time

T0 = time.perf_counter()
import torch  # noqa: E402

from y9train.models import build_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="yolov9-s")
    ap.add_argument("--device", default="0")
    args = ap.parse_args()
    dev = torch.device(f"cuda:{args.device}" if args.device.isdigit() else args.device)
    laps: dict[str, float] = {"imports": time.perf_counter() - T0}
    last = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal last
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        now = time.perf_counter()
        laps[name] = round(now - last, 4)
        last = now
        print(f"{name:24s} {laps[name]:8.3f} s", flush=True)

    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    lap("set_device")
    lap("context (synchronize)")
    x = torch.empty(1024, device=dev)
    lap("first allocation")
    x.add_(1)
    lap("first kernel")
    for second in (False, True):
        tag = "second " if second else ""
        m = build_model(args.model, nc=6)
        lap(f"{tag}build on cpu")
        m = m.float().train().to(dev)
        lap(f"{tag}to device")
        m = m.to(memory_format=torch.channels_last)
        lap(f"{tag}channels_last")
    print(json.dumps(laps))


if __name__ == "__main__":
    main()
