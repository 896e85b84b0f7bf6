# Issue 37, lease 1 (nvidia-h200, everything alone: wall times). Carries .dev/whl and .dev/data1 (deeppcb). Start it in
# the background (each device call is at most 10 minutes), then poll:
#   W=/root/w; (setsid nohup bash docs/next-gpu-run/s20-alone.sh > /root/w-alone.log 2>&1 &); sleep 540; tail -5 /root/w-alone.log
#   W=/root/w; sleep 300; tail -20 /root/w-alone.log; cp /root/w/alone-*.tgz $OUT/
# docs/benchmarks.md, "Next GPU run (issue 37)".
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
stage deeppcb; machine
python3 benchmarks/bench_accuracy.py split $W/data/deeppcb/data.yaml --out $W/splits/deeppcb
D=$W/splits/deeppcb/data.yaml
pack() { (cd $W && tar czf $W/alone-$1.tgz $(ls vs*/versus.json vs*/*/timing.json vs*/y9/run/startup.json vs*/y9/run/results.csv vs*/*.log steps32/*.json 2>/dev/null)); }
# 1. the 40-epoch wall, y9 then Ultralytics, each alone in its own process (~8 min)
python3 benchmarks/bench_train_versus.py $D --epochs 40 --batch 32 --workers 8 --out $W/vs40; pack 1
# 2. steady state at batch 32 in steps (~1.5 min)
python3 benchmarks/bench_train_gpu.py $D --batch 32 --workers 8 --ckpt off --cache ram --models yolov9-s \
    --warmup-steps 8 --steps 48 --loader-cache ram --out $W/steps32; pack 2
# 3. the start's bounds, 2 epochs each (~1.5 min)
python3 benchmarks/bench_train_versus.py $D --trainers y9 --epochs 2 --out $W/vs2-default
python3 benchmarks/bench_train_versus.py $D --trainers y9 --epochs 2 --out $W/vs2-bounded \
    --set cudnn_benchmark_limit=1 cuda_graph_warmup=1; pack 3
echo "alone runs done"
