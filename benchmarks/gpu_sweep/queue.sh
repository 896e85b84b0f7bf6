# queue.sh MAX SPEC: start the runs listed in SPEC (one line per run: the arguments of `job`, see job.sh; $W expands)
# in order, at most MAX at a time. A line "needs DATASET" waits until DATASET is staged (stage in job.sh marks it),
# so a later device call can bring the next dataset while the first runs go on. Start it with setsid (it outlives
# the call); it logs "queue done" in $W/times.txt after starting the last run.
W=${W:-/root/w}; cd $W/code || exit 1
source $W/job.sh
export PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 PYTHONPATH=$W/site:$W/code
max=$1; spec=$2
while read -r line; do
  case "$line" in "" | \#*) continue ;; esac
  set -- $line
  if [ "$1" = needs ]; then
    while [ ! -f $W/data/$2.staged ]; do sleep 5; done
    continue
  fi
  while [ "$(running_runs)" -ge "$max" ]; do sleep 5; done
  eval job "$line"
  sleep 3
done < "$spec"
echo "$(date +%s) queue done" >> $W/times.txt
