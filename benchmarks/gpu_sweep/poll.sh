# poll.sh SECONDS TAG: wait up to SECONDS or until no job runs, then report and pack $OUT/results-TAG.tgz
source benchmarks/gpu_sweep/common.sh
end=$(( $(date +%s) + $1 )); tag=$2
while [ $(date +%s) -lt $end ]; do
  running=$(pgrep -fc "bench_accuracy.py run" || true)
  [ "$running" = "0" ] && ! pgrep -f "alone.sh" > /dev/null && break
  sleep 10
done
echo "== $(date -u +%T) running: $(pgrep -fc 'bench_accuracy.py run' || true)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
for d in $W/jobs/*/; do
  n=$(basename $d); csv=$(ls $d/r/*/results.csv 2>/dev/null | head -1)
  ep=$( [ -n "$csv" ] && tail -n +2 $csv | wc -l || echo 0)
  res=$( [ -f $d/r/result.json ] && python3 -c "import json;d=json.load(open('$d/r/result.json'));print('mAP %.4f wall %s'%(d['map50_95'],d['wall_s']))" || echo "-")
  echo "$n epochs=$ep $res | $(tail -c 200 $d/log.txt | tr '\n\r' '  ' | tail -c 120)"
done
for d in $W/jobs/*/; do tail -c 30000 $d/log.txt > $d/logtail.txt 2>/dev/null; done
cd $W && tar czf $OUT/results-$tag.tgz times.txt $(ls -d jobs/*/r/result.json jobs/*/r/*/results.csv jobs/*/r/diag.csv 2>/dev/null) $(ls jobs/*/logtail.txt) 2>/dev/null
cat $W/times.txt | tail -20
