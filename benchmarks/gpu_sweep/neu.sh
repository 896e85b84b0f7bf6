source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
stage neu-det
machine
(cd $W/code && git log -1 --format=%h 2>/dev/null; true)
for m in yolov9-s:v9s gelan-s:gs; do for s in 0 1; do job neu-${m#*:}-s$s neu-det ${m%:*} $s 3; done; done
sleep 5; cat $W/times.txt
