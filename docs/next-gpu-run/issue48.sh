# Issue 48, the run script of rounds two (session 25, H100: up to the accuracy runs, ACC_SEEDS="0 1") and three (nvidia-h100-x1 or nvidia-h200; about 25 minutes of device time, start included).
# Carries .dev (git-ignored): .dev/whl (faster-coco-eval, ultralytics==8.4.190, ultralytics-thop; cp312 wheels),
# .dev/data1/deeppcb (a copy of ../shared/datasets/deeppcb: 1,000 train / 30 val) and .dev/old.tar
# (`git archive 9884a11 y9core y9train y9deploy y9 y9cli benchmarks | tar --delete y9deploy/assets/y9-coco128.pt`:
# the code before issue 48). Start it in the background and poll, in calls back to back (the machine goes back 30 s
# after a call; each call returns within 10 minutes):
#   W=/root/w; [ -f $W/started ] || { rm -rf $W; mkdir -p $W; touch $W/started; setsid nohup bash docs/next-gpu-run/issue48.sh > $W/run.log 2>&1 < /dev/null & }
#   for i in $(seq 110); do grep -q "ALL DONE" $W/keep/summary.txt 2>/dev/null && break; sleep 5; done; (cd $W/keep && tar czf $OUT/keep.tgz .); tail -40 $W/keep/summary.txt
# Order: y9 first on the fresh machine (its first run counts), then Ultralytics, each alone; then the steps of the
# old code and of this one with the levers, one at a time; the accuracy: 4 DeepPCB seeds of this code and 4 of the old, all eight at once, on a split whose
# train part (750 images, every 4th of 1,000 evaluates: 250) leaves a last batch of 14, which this code fills; last two 2-epoch runs
# (validation with and without cuDNN autotuning).
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
K=$W/keep; mkdir -p $K $W/old; tar xf .dev/old.tar -C $W/old
log() { echo "$(date +%s.%N | cut -c1-14) $*" | tee -a $K/summary.txt; }
stage deeppcb > /dev/null
# the data.yaml with its folder absolute: Ultralytics resolves "path: ." against its own datasets folder
D=$W/data/deeppcb/data-abs.yaml; sed "s|^path: .*|path: $W/data/deeppcb|" $W/data/deeppcb/data.yaml > $D
machine >> $K/summary.txt 2>&1
versus() { # versus TREE OUT TRAINER EPOCHS [args]: one trainer alone, batch 32, 8 workers, RAM cache
  local tree=$1 out=$2 who=$3 epochs=$4; shift 4
  (cd $tree && PYTHONPATH=$W/site:$tree python3 benchmarks/bench_train_versus.py $D --trainers $who --epochs $epochs \
    --batch 32 --workers 8 --out $W/$out "$@" > $K/$out.txt 2>&1)
  cp $W/$out/versus.json $K/$out.json 2>/dev/null; cp $W/$out/$who.log $K/$out-$who.log 2>/dev/null
  find $W/$out -name timing.json -exec cp {} $K/$out-timing.json \; 2>/dev/null
  log "$out done"; tail -3 $K/$out.txt >> $K/summary.txt
}
steps() { # steps TREE NAME [args]: bench_train_gpu's timed steps of yolov9-s: the first epoch (32 batches) warms up,
  # so that the old code's eager, autotuned last batch of 8 is not timed (session 25's 68 img/s), then 24 timed batches
  local tree=$1 name=$2; shift 2; log "steps $name: $*"
  (cd $tree && PYTHONPATH=$W/site:$tree timeout 240 python3 benchmarks/bench_train_gpu.py $D --workers 8 --ckpt off \
    --cache ram --models yolov9-s --warmup-steps 32 --steps 24 --loader-cache --out $W/$name "$@" > $K/$name.log 2>&1)
  tail -3 $K/$name.log >> $K/summary.txt; cp $W/$name/bench_train.json $K/$name.json 2>/dev/null
}
log "y9 (this code) 40 epochs"; versus $W/code vs40-y9 y9 40
echo "driver JIT cache after y9: $(du -sh /root/.nv/ComputeCache 2>&1 | cut -f1)" >> $K/summary.txt
log "Ultralytics 40 epochs"; versus $W/code vs40-ul ultralytics 40
# OLD40=1: the code before issue 48 for 40 epochs too (its in-run steady img/s: the 1.3x line; about 4 minutes)
[ -n "${OLD40:-}" ] && { log "y9 before issue 48, 40 epochs"; versus $W/old vs40-old y9 40; }
steps $W/old steps-old --batch 32
steps $W/code steps-new --batch 32
steps $W/code steps-w12 --batch 32 --workers 12
steps $W/code steps-b64 --batch 64
log "accuracy: seeds ${ACC_SEEDS:-0 1 2 3} of this code and of the old, all at once, 3 workers each"
export SPLIT_EVERY=4
SEEDS=${ACC_SEEDS:-0 1 2 3}
for s in $SEEDS; do job acc-new-s$s deeppcb yolov9-s $s 3; CODE=$W/old job acc-old-s$s deeppcb yolov9-s $s 3; done
while [ "$(grep -c " end " $W/times.txt)" -lt $(( 2 * $(echo $SEEDS | wc -w) )) ]; do sleep 10; done
for d in $W/jobs/acc-*; do n=$(basename $d); cp $d/r/result.json $K/$n.json 2>/dev/null; tail -5 $d/log.txt > $K/$n.tail; done
cat $W/times.txt >> $K/summary.txt
steps $W/code steps-fp16 --batch 32 --amp fp16
log "2 epochs, validation autotuned (default)"; versus $W/code vs2-valtune y9 2
log "2 epochs, val_autotune=false"; versus $W/code vs2-valheur y9 2 --set val_autotune=false
log "ALL DONE"
