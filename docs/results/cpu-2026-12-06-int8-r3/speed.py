import sys, time, statistics, numpy as np, onnxruntime as ort, os
# usage: speed.py ROUNDS THREADS LEVEL a.onnx b.onnx ...
rounds, threads, level = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ss = {}
for p in sys.argv[4:]:
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    o.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level); o.log_severity_level = 3
    ss[p] = ort.InferenceSession(p, o, providers=['CPUExecutionProvider'])
hw = next(iter(ss.values())).get_inputs()[0].shape[2:]
x = np.random.default_rng(0).random((1, 3, *hw), dtype=np.float32)
for s in ss.values(): s.run(None, {'images': x}); s.run(None, {'images': x})
t = {p: [] for p in ss}
for r in range(rounds):
    for p, s in ss.items():
        a = time.perf_counter(); s.run(None, {'images': x}); t[p].append(time.perf_counter() - a)
base = statistics.median(t[next(iter(t))])
print('load', open('/proc/loadavg').read().split()[:3])
for p in t: m = statistics.median(t[p]); print(f'{os.path.basename(p):40s} {1000*m:7.1f} ms  x{base/m:.2f}', flush=True)
