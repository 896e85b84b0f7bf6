# start.sh MAX SPEC: the first device call of a lease: stage the carried datasets, start queue.sh MAX SPEC in its own
# process session (it outlives the call), print the machine. Later calls: `source common.sh; source job.sh;
# stage DATASET` for a dataset that call carries, then `bash benchmarks/gpu_sweep/poll.sh SECONDS TAG`.
source benchmarks/gpu_sweep/common.sh; source benchmarks/gpu_sweep/job.sh
for f in .dev/data*/*/; do stage "$(basename $f)"; done
machine
cp benchmarks/gpu_sweep/job.sh benchmarks/gpu_sweep/queue.sh "$2" $W/
(setsid nohup bash $W/queue.sh "$1" $W/$(basename "$2") > $W/queue.log 2>&1 &)
sleep 5; cat $W/times.txt
