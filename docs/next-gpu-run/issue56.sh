# Issue 56, the lease script. Round one (session 26, H100, 11.6 minutes of device time after failed starts) measured
# the step's levers and 40 epochs of y9 with cudnn_benchmark_limit=1 cuda_graph_warmup=1 val_autotune=false against
# Ultralytics (docs/benchmarks.md, "Training: speed"). Round two (session 27), in this order, what matters most first
# (about 25 minutes of device time on one fresh nvidia-h100-x1 or nvidia-h200, start included):
#   1. 4 DeepPCB seeds of the defaults at once (SPLIT_EVERY=4: 750 train, 250 held out), their mean and spread; seed
#      0's best.pt is kept for issue 55 (a DeepPCB model trained by y9, quantized on the CPU); first, since three
#      failed starts left 19 of the 30 device minutes (a fresh machine's cold capture: sessions 25 and the issue);
#   2. y9 for 40 epochs with the defaults, then Ultralytics, each alone: the versus table's same-machine pair;
#   3. y9 for 40 epochs with val_autotune=false alone (3.5 s less first validation in round one): the whole-run
#      figure the lever needs before it becomes a default (fp16 is left out: its step, 330 img/s, lay inside the
#      defaults' two runs on that machine, 316 and 329);
#   4. Ultralytics' 40 epochs again (its spread on one machine);
#   5. a torch.compile probe (no CUDA graph), the one step lever not yet measured.
# Carries .dev (git-ignored in the lead's checkout, which is what a device call sends):
#   .dev/whl            faster-coco-eval, ultralytics==8.4.190, ultralytics-thop (cp312 wheels)
#   .dev/data1/deeppcb  a copy of ../shared/datasets/deeppcb (1,000 train / 30 val)
#   .dev/code           the tree to measure: `git archive HEAD y9core y9train y9deploy y9 y9cli benchmarks docs/next-gpu-run
#                       | tar x -C .dev/code --exclude y9deploy/assets/y9-coco128.pt` (laid over the lead's tree)
# Start it in the background and poll, in calls back to back (the machine goes back 30 s after a call; each call
# returns within 10 minutes; stop polling with a minute of the budget left, or what is under $OUT is lost):
#   W=/root/w; [ -f $W/started ] || { rm -rf $W; mkdir -p $W; touch $W/started; setsid nohup bash .dev/code/docs/next-gpu-run/issue56.sh > $W/run.log 2>&1 < /dev/null & }
#   for i in $(seq 110); do grep -q "ALL DONE" $W/keep/summary.txt 2>/dev/null && break; sleep 5; done; (cd $W/keep && tar czf $OUT/keep.tgz .); cp $W/*-best.pt $OUT/ 2>/dev/null; tail -30 $W/keep/summary.txt
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
log "1. accuracy (on the fresh machine): seeds ${ACC_SEEDS:-0 1 2 3} of the defaults, all at once, 3 workers each"
export SPLIT_EVERY=4
SEEDS=${ACC_SEEDS:-0 1 2 3}
for s in $SEEDS; do job acc-s$s deeppcb yolov9-s $s 3; done
while [ "$(grep -c " end " $W/times.txt)" -lt "$(echo $SEEDS | wc -w)" ]; do sleep 10; done
for d in $W/jobs/acc-*; do n=$(basename $d); cp $d/r/result.json $K/$n.json 2>/dev/null; tail -5 $d/log.txt > $K/$n.tail; done
# the poll copies it into $OUT on its own (16 MiB a file): `bench_accuracy.py split --every 4` remakes its held-out split
b=$(find $W/jobs/acc-s0/r -name best.pt | head -1); [ -n "$b" ] && cp $b $W/deeppcb-yolov9-s-seed0-best.pt
cat $W/times.txt >> $K/summary.txt
log "2. y9 40 epochs, the defaults; then Ultralytics"
versus $W/code vs40-y9 y9 40
echo "driver JIT cache after y9: $(du -sh /root/.nv/ComputeCache 2>&1 | cut -f1)" >> $K/summary.txt
versus $W/code vs40-ul ultralytics 40
log "3. y9 40 epochs with val_autotune=false"
versus $W/code vs40-y9-valheur y9 40 --set val_autotune=false
log "4. Ultralytics 40 epochs again"; versus $W/code vs40-ul2 ultralytics 40
log "5. torch.compile probe (no CUDA graph)"
STEP_TIMEOUT=300 steps $W/code steps-compile --compile
log "ALL DONE"
