source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
stage deeppcb
for m in yolov9-s:v9s gelan-s:gs; do for s in 0 1; do job pcb-${m#*:}-s$s deeppcb ${m%:*} $s 3; done; done
if [ "${PARITY:-0}" = 1 ]; then for s in 0 1; do job pcb-hypoff-s$s deeppcb yolov9-s $s 3 --hyp official; done; fi
if [ "${OFFICIAL:-0}" = 1 ]; then job pcb-official-s1 deeppcb yolov9-s 1 4 --reference official --official-dir $W/official; fi
# phase A: once every job above is done, y9 alone then Ultralytics alone (8 workers each)
cp benchmarks/gpu_sweep/alone.sh benchmarks/gpu_sweep/job.sh $W/
(setsid nohup bash $W/alone.sh > $W/alone.log 2>&1 &)
sleep 5; cat $W/times.txt
