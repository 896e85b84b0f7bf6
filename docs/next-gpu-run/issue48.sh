# Issue 48, the wall-time lease (nvidia-h200 or nvidia-h100-x1; about 13 minutes of device time, start included).
# Carries .dev (git-ignored): .dev/whl (faster-coco-eval, ultralytics==8.4.190, ultralytics-thop; cp312 wheels),
# .dev/data1/deeppcb (a copy of ../shared/datasets/deeppcb: 1,000 train / 30 val) and .dev/old.tar
# (`git archive 9884a11 y9core y9train y9deploy y9 y9cli benchmarks | tar --delete y9deploy/assets/y9-coco128.pt`:
# the code before issue 48). Start it in the background and poll, in calls back to back (the machine goes back 30 s
# after a call; each call returns within 10 minutes):
#   W=/root/w; [ -f $W/started ] || { rm -rf $W; mkdir -p $W; touch $W/started; setsid nohup bash docs/next-gpu-run/issue48.sh > $W/run.log 2>&1 < /dev/null & }
#   for i in $(seq 100); do grep -q "ALL DONE" $W/keep/summary.txt 2>/dev/null && break; sleep 5; done; (cd $W/keep && tar czf $OUT/keep.tgz .); tail -30 $W/keep/summary.txt
# Order: y9 first on the fresh machine (its first run counts), then Ultralytics, each alone; then the old code's 40
# epochs (the steady img/s baseline on the same machine), the old code's exit probe, the step levers.
source benchmarks/gpu_sweep/common.sh 2>/dev/null; source benchmarks/gpu_sweep/job.sh
K=$W/keep; mkdir -p $K $W/old; tar xf .dev/old.tar -C $W/old
log() { echo "$(date +%s.%N | cut -c1-14) $*" | tee -a $K/summary.txt; }
stage deeppcb > /dev/null
# the data.yaml with its folder absolute: Ultralytics resolves "path: ." against its own datasets folder, not the
# file's (session 24's Ultralytics child exited with status 1 within 11 s on the relative one; its log was lost)
D=$W/data/deeppcb/data-abs.yaml; sed "s|^path: .*|path: $W/data/deeppcb|" $W/data/deeppcb/data.yaml > $D
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> $K/summary.txt; nproc >> $K/summary.txt
versus() { # versus TREE OUT TRAINER [args]: one trainer alone, 40 epochs, batch 32, 8 workers, RAM cache
  local tree=$1 out=$2 who=$3; shift 3
  (cd $tree && PYTHONPATH=$W/site:$tree python3 benchmarks/bench_train_versus.py $D --trainers $who --epochs 40 \
    --batch 32 --workers 8 --out $W/$out "$@" > $K/$out.txt 2>&1)
  cp $W/$out/versus.json $K/$out.json 2>/dev/null; cp $W/$out/$who.log $K/$out-$who.log 2>/dev/null
  log "$out done"; tail -3 $K/$out.txt >> $K/summary.txt
}
log "y9 (this code) 40 epochs"; versus $W/code vs40-y9 y9
machine >> $K/summary.txt 2>&1
log "Ultralytics 40 epochs"; versus $W/code vs40-ul ultralytics
log "y9 before issue 48, 40 epochs"; versus $W/old vs40-old y9
log "exit probe, code before issue 48"
s=$(date +%s.%N); (cd $W/old && PYTHONPATH=$W/site:$W/old python3 $W/code/benchmarks/probe_exit_tail.py trainer $D \
  --epochs 4 --out $W/probe > $K/probe-old.log 2>&1); log "probe process ended (started $s)"
grep -E "^T |^children" $K/probe-old.log >> $K/summary.txt
n=0; for cfg in "--amp bf16 --batch 32" "--amp fp16 --batch 32" "--amp bf16 --batch 64" \
  "--amp bf16 --batch 32 --set cudnn_benchmark_limit=1 cuda_graph_warmup=1"; do
  n=$((n+1)); log "lever $n: $cfg"
  (cd $W/code && python3 benchmarks/bench_train_gpu.py $D $cfg --workers 8 --ckpt off --cache ram --models yolov9-s \
    --warmup-steps 8 --steps 32 --loader-cache --out $W/lever$n > $K/lever$n.log 2>&1)
  tail -3 $K/lever$n.log >> $K/summary.txt; cp $W/lever$n/bench_train.json $K/lever$n.json 2>/dev/null
done
log "ALL DONE"
