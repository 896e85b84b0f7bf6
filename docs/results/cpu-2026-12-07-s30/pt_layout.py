import statistics, time, numpy as np, torch
from y9deploy import Detector
torch.set_num_threads(1)
for size in (640, 416, 160):
    with Detector("y9deploy/assets/y9-coco128.pt", device="cpu", imgsz=size) as det:
        x = np.random.default_rng(0).random((1, 3, size, size), dtype=np.float32)
        det.backend.infer(x)
        t = []
        for _ in range(7): s = time.perf_counter(); det.backend.infer(x); t.append(time.perf_counter() - s)
        print(size, round(1000 * statistics.median(t), 1), "ms")
