# poll.sh SECONDS TAG: wait up to SECONDS or until no run is going and no queue is left, packing the
# results every minute (a call stopped at its limit still brings back the last pack): one line per run, and
# results, per-epoch CSVs and log tails in $OUT/results-TAG.tgz
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
end=$(( $(date +%s) + $1 )); tag=$2
pack() {
  for d in $W/jobs/*/; do tail -c 30000 $d/log.txt > $d/logtail.txt 2>/dev/null; done
  (cd $W && tar czf $OUT/results-$tag.tgz times.txt $(ls -d jobs/*/r/result.json jobs/*/r/*/results.csv jobs/*/r/official/results.csv 2>/dev/null) $(ls jobs/*/logtail.txt) 2>/dev/null)
}
busy() { pgrep -f "bench_accuracy.py run" > /dev/null || pgrep -f "queue.sh" > /dev/null; }
last=0
while [ $(date +%s) -lt $end ] && busy; do
  [ $(( $(date +%s) - last )) -ge 60 ] && pack && last=$(date +%s)
  sleep 10
done
echo "== $(date -u +%T) runs going: $(running_runs)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi 2>/dev/null --query-gpu=utilization.gpu,memory.used --format=csv,noheader
for d in $W/jobs/*/; do
  n=$(basename $d); csv=$(ls $d/r/*/results.csv 2>/dev/null | head -1)
  ep=$( [ -n "$csv" ] && tail -n +2 $csv | wc -l || echo 0)
  res=$( [ -f $d/r/result.json ] && python3 -c "import json;d=json.load(open('$d/r/result.json'));print('mAP %.4f wall %s'%(d['map50_95'],d['wall_s']))" || echo "-")
  echo "$n epochs=$ep $res | $(tail -c 200 $d/log.txt | tr '\n\r' '  ' | tail -c 120)"
done
pack
tail -25 $W/times.txt
