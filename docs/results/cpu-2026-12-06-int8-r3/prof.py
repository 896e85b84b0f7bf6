import sys, json, collections, numpy as np, onnxruntime as ort, os
path = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
o.enable_profiling = True; o.profile_file_prefix = '/tmp/w55c/prof_' + os.path.basename(path)
o.log_severity_level = 3
s = ort.InferenceSession(path, o, providers=['CPUExecutionProvider'])
hw = s.get_inputs()[0].shape[2:]
x = np.random.default_rng(0).random((1, 3, *hw), dtype=np.float32)
for _ in range(n): s.run(None, {'images': x})
f = s.end_profiling()
ev = json.load(open(f))
tot = collections.Counter(); cnt = collections.Counter()
for e in ev:
    if e.get('cat') == 'Node' and e['name'].endswith('_kernel_time'):
        op = e['args'].get('op_name'); tot[op] += e['dur']; cnt[op] += 1
all_ = sum(tot.values())
print(path, 'total per run ms', all_ / n / 1000)
for op, d in tot.most_common(): print(f'{op:28s} {d/n/1000:8.1f} ms  {cnt[op]//n:4d} nodes  {100*d/all_:5.1f}%')
