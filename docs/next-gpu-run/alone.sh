# Issue 37, the wall-time runs (nvidia-h200, everything alone). Carries .dev/whl and .dev/data1 (deeppcb). Start it in
# the background (a device call lasts at most 10 minutes), then poll with the same line until "alone runs done":
#   W=/root/w; [ -f $W/alone.log ] || (setsid nohup bash docs/next-gpu-run/alone.sh > $W-alone.log 2>&1 &)
#   for i in $(seq 57); do sleep 10; grep -q "alone runs done" /root/w-alone.log && break; done; cp /root/w-alone.log /root/w/alone.tgz $OUT/
# The short runs go first: a fault shows within two minutes. docs/benchmarks.md, "Training: speed".
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
stage deeppcb; machine
python3 benchmarks/bench_accuracy.py split $W/data/deeppcb/data.yaml --out $W/splits/deeppcb
D=$W/splits/deeppcb/data.yaml
pack() { (cd $W && tar czf $W/alone.tgz $(ls vs*/versus.json vs*/*/timing.json vs*/y9/run/startup.json vs*/y9/run/results.csv vs*/*.log steps32/*.json 2>/dev/null)); }
# 1. y9 alone for 2 epochs with its defaults, then with the start's bounds (about 1 minute each)
python3 benchmarks/bench_train_versus.py $D --trainers y9 --epochs 2 --out $W/vs2-default; pack
python3 benchmarks/bench_train_versus.py $D --trainers y9 --epochs 2 --out $W/vs2-bounded \
    --set cudnn_benchmark_limit=1 cuda_graph_warmup=1; pack
# 2. the 40-epoch wall, y9 then Ultralytics, each alone in its own process (about 7 minutes)
python3 benchmarks/bench_train_versus.py $D --epochs 40 --batch 32 --workers 8 --out $W/vs40; pack
# 3. steady state at batch 32 in steps, the loader apart (about 1.5 minutes)
python3 benchmarks/bench_train_gpu.py $D --batch 32 --workers 8 --ckpt off --cache ram --models yolov9-s \
    --warmup-steps 8 --steps 48 --loader-cache ram --out $W/steps32; pack
echo "alone runs done"
