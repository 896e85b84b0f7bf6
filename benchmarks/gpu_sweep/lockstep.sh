# lockstep.sh OUT: benchmarks/official_lockstep.py on GPU 0, from the repository root: train_dual.py untouched
# ($W/official, fp16 autocast + GradScaler), then y9's teacher-forced and free-running comparison. The shared files
# it reads come carried in .dev/lockstep-shared (datasets/coco8, fixtures/official/real/yolov9-t-train-dual-final.pt).
# Writes OUT/official-steps.json, OUT/lockstep.json and the logs OUT.official.log, OUT.compare.log.
source benchmarks/gpu_sweep/common.sh
out=$1; mkdir -p $out
export Y9_SHARED=$PWD/.dev/lockstep-shared
if ! python3 benchmarks/official_lockstep.py official --official-dir $W/official --python python3 --out $out --epochs ${EPOCHS:-30} \
    --device 0 > $out.official.log 2>&1; then
  tail -20 $out.official.log; tail -40 $out/official.log; exit 1
fi
python3 benchmarks/official_lockstep.py compare --out $out --device 0 > $out.compare.log 2>&1
rc=$?; grep -v Warning $out.compare.log | tail -60; exit $rc
