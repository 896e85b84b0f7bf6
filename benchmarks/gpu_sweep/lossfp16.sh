# lossfp16.sh OUT: benchmarks/check_loss_fp16.py on GPU 0, from the repository root, beside the runs a spec started
# (a correctness check, not a timing: sharing the GPU is fine). It takes the DeepPCB split that the first job of the
# spec wrote ($W/jobs/*/splits/deeppcb/data.yaml; waits up to 5 minutes for it) and the official source in
# $W/official: train_dual.py's own loss under fp16 autocast against y9's loss with loss_fp16 on and off, on the same
# fp16 predictions of the official yolov9-s after 100 of its own training steps. Writes OUT/loss_fp16.json.
source benchmarks/gpu_sweep/common.sh
out=$1; mkdir -p $out
for i in $(seq 60); do split=$(ls $W/jobs/*/splits/deeppcb/data.yaml 2>/dev/null | head -1); [ -n "$split" ] && break; sleep 5; done
[ -n "$split" ] || { echo "no DeepPCB split under $W/jobs"; exit 1; }
python3 benchmarks/check_loss_fp16.py --official-dir $W/official --data $split --model yolov9-s --imgsz 640 \
    --batch 16 --train-steps 100 --batches 4 --device cuda:0 --out $out/loss_fp16.json > $out/loss_fp16.log 2>&1
rc=$?; grep -v "Warning\|models.common\|^ " $out/loss_fp16.log | tail -25; exit $rc
