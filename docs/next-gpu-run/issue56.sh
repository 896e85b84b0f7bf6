# Issue 56, round one (session 26): the step's levers, the capture's levers and the 40-epoch versus table on one
# fresh nvidia-h100-x1 or nvidia-h200 (about 22 minutes of device time, start included, if every part is reached).
# Carries .dev (git-ignored in the lead's checkout, which is what a device call sends):
#   .dev/whl            faster-coco-eval, ultralytics==8.4.190, ultralytics-thop (cp312 wheels)
#   .dev/data1/deeppcb  a copy of ../shared/datasets/deeppcb (1,000 train / 30 val)
#   .dev/code           this branch: `git -C WT archive HEAD y9core y9train y9deploy y9 y9cli benchmarks docs/next-gpu-run
#                       | tar x -C .dev/code --exclude y9deploy/assets/y9-coco128.pt` (laid over the lead's tree)
# The lead's checkout (the tree sent) is the baseline, $W/base; this branch is $W/code. Where this branch changes no
# default (session 26: none changed), both trees train the same. Start it in the background and poll, in calls back to
# back (the machine goes back 30 s after a call; each call returns within 10 minutes):
#   W=/root/w; [ -f $W/started ] || { rm -rf $W; mkdir -p $W; touch $W/started; setsid nohup bash .dev/code/docs/next-gpu-run/issue56.sh > $W/run.log 2>&1 < /dev/null & }
#   for i in $(seq 110); do grep -q "ALL DONE" $W/keep/summary.txt 2>/dev/null && break; sleep 5; done; (cd $W/keep && tar czf $OUT/keep.tgz .); tail -30 $W/keep/summary.txt
# Order (what matters most first, since the lease may end before the last part; session 26 had 14 minutes left after
# failed starts, so the levers go first and the 40-epoch runs are on a warm machine):
#   1. the step with each lever, one at a time (bench_train_gpu: the first epoch warms up, 24 batches timed):
#      defaults (bf16, channels-last, CUDA graph, fused AdamW, foreach EMA; the fresh machine's cold capture),
#      cudnn_benchmark_limit=1 + cuda_graph_warmup=1, fp16, --deterministic, the defaults again (the noise);
#   2. 2-epoch runs (warm machine): the capture, first epoch and first validation with the defaults and with the
#      capture's levers plus val_autotune=false (startup.json separates the two);
#   3. y9 for 40 epochs with those levers, Ultralytics, y9 with the defaults, each alone;
#   4. 4 DeepPCB seeds of the defaults at once (SPLIT_EVERY=4: 750 train, 250 held out), their mean and spread;
#   5. Ultralytics' 40 epochs again (its spread on one machine); 6. a torch.compile probe (time to its first step).
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
K=$W/keep; mkdir -p $K
# $W/code (common.sh: the lead's tracked files) becomes the baseline; this branch is laid over a copy of it
[ -d $W/base ] || { cp -r $W/code $W/base && cp -r .dev/code/. $W/code/; }
log() { echo "$(date +%s.%N | cut -c1-14) $*" | tee -a $K/summary.txt; }
stage deeppcb > /dev/null
# the data.yaml with its folder absolute: Ultralytics resolves "path: ." against its own datasets folder
D=$W/data/deeppcb/data-abs.yaml; sed "s|^path: .*|path: $W/data/deeppcb|" $W/data/deeppcb/data.yaml > $D
machine >> $K/summary.txt 2>&1
versus() { # versus TREE OUT TRAINER EPOCHS [args]: one trainer alone, batch 32, 8 workers, RAM cache
  local tree=$1 out=$2 who=$3 epochs=$4; shift 4
  (cd $tree && PYTHONPATH=$W/site:$tree python3 benchmarks/bench_train_versus.py $D --trainers $who --epochs $epochs \
    --batch 32 --workers 8 --out $W/$out "$@" > $K/$out.txt 2>&1)
  cp $W/$out/versus.json $K/$out.json 2>/dev/null
  find $W/$out -name timing.json -exec cp {} $K/$out-timing.json \; 2>/dev/null
  find $W/$out -name startup.json -exec cp {} $K/$out-startup.json \; 2>/dev/null
  find $W/$out -name results.csv -exec cp {} $K/$out-results.csv \; 2>/dev/null
  log "$out done"; tail -3 $K/$out.txt >> $K/summary.txt
}
steps() { # steps TREE NAME [args]: bench_train_gpu's timed steps of yolov9-s at batch 32: 32 warm-up batches, 24 timed
  local tree=$1 name=$2; shift 2; log "steps $name: $*"
  (cd $tree && PYTHONPATH=$W/site:$tree timeout ${STEP_TIMEOUT:-240} python3 benchmarks/bench_train_gpu.py $D --workers 8 \
    --ckpt off --cache ram --models yolov9-s --batch 32 --warmup-steps 32 --steps 24 --loader-cache --out $W/$name "$@" \
    > $K/$name.log 2>&1)
  tail -2 $K/$name.log >> $K/summary.txt; cp $W/$name/bench_train.json $K/$name.json 2>/dev/null
}
log "1. the step's levers (the first process on the fresh machine: steps-default, whose capture is the cold one)"
steps $W/code steps-default
steps $W/code steps-capture1 --set cudnn_benchmark_limit=1 cuda_graph_warmup=1
steps $W/code steps-fp16 --amp fp16
steps $W/code steps-det --deterministic
steps $W/code steps-default2
echo "driver JIT cache after the steps: $(du -sh /root/.nv/ComputeCache 2>&1 | cut -f1)" >> $K/summary.txt
log "2. 2 epochs: the defaults, then cudnn_benchmark_limit=1 cuda_graph_warmup=1 (the capture) val_autotune=false (the first validation)"
versus $W/code vs2-default y9 2
versus $W/code vs2-levers y9 2 --set cudnn_benchmark_limit=1 cuda_graph_warmup=1 val_autotune=false
log "3. y9 40 epochs with the start's levers, then Ultralytics, then y9 with the defaults, each alone"
versus $W/code vs40-y9-levers y9 40 --set cudnn_benchmark_limit=1 cuda_graph_warmup=1 val_autotune=false
versus $W/code vs40-ul ultralytics 40
versus $W/code vs40-y9 y9 40
log "4. accuracy: seeds ${ACC_SEEDS:-0 1 2 3} of the defaults, all at once, 3 workers each"
export SPLIT_EVERY=4
SEEDS=${ACC_SEEDS:-0 1 2 3}
for s in $SEEDS; do job acc-s$s deeppcb yolov9-s $s 3; done
while [ "$(grep -c " end " $W/times.txt)" -lt "$(echo $SEEDS | wc -w)" ]; do sleep 10; done
for d in $W/jobs/acc-*; do n=$(basename $d); cp $d/r/result.json $K/$n.json 2>/dev/null; tail -5 $d/log.txt > $K/$n.tail; done
cat $W/times.txt >> $K/summary.txt
log "5. Ultralytics 40 epochs again"; versus $W/code vs40-ul2 ultralytics 40
log "6. torch.compile probe (no CUDA graph), twice: the second finds inductor's on-disk cache (/tmp/torchinductor_root)"
STEP_TIMEOUT=240 steps $W/code steps-compile --compile
STEP_TIMEOUT=240 steps $W/code steps-compile2 --compile
log "ALL DONE"
