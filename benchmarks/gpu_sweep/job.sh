# job NAME DATASET(deeppcb|neu-det) MODEL SEED WORKERS [bench_accuracy run args...]
# SPLIT_EVERY: every Nth image evaluates (default 5); SPLIT_PART: which of the N (default N-1; another part, a disjoint held-out set); CODE: the y9 tree the run uses (default $W/code; e.g. $W/old, a `git archive` of an older commit);
# GPUS=N: the runs go to GPUs 0..N-1 in turn (CUDA_VISIBLE_DEVICES), by the number of runs started so far.
job() {
  local name=$1 ds=$2 model=$3 seed=$4 workers=$5; shift 5
  local d=$W/jobs/$name code=${CODE:-$W/code} gpu=""
  mkdir -p $d
  cp -r $W/data/$ds $d/data
  (cd $code && python3 benchmarks/bench_accuracy.py split $d/data/data.yaml --out $d/splits/$ds --every ${SPLIT_EVERY:-5} ${SPLIT_PART:+--part $SPLIT_PART} > $d/split.log 2>&1)
  touch $W/times.txt
  [ -n "${GPUS:-}" ] && gpu="CUDA_VISIBLE_DEVICES=$(( $(grep -c " start " $W/times.txt) % GPUS ))"
  echo "$(date +%s) start $name $gpu" >> $W/times.txt
  (cd $code && setsid nohup bash -c "$gpu python3 benchmarks/bench_accuracy.py run --data $d/splits/$ds/data.yaml --out $d/r --model $model --seed $seed --workers $workers --label ${name%-s[0-9]} $* ${SMOKE_ARGS:-} > $d/log.txt 2>&1; rc=\$?; echo \"\$(date +%s) end $name rc=\$rc\" >> $W/times.txt" > /dev/null 2>&1 &)
}
stage() { # stage DATASET from .dev/dataN
  for f in .dev/data*/$1; do [ -d $f ] && [ ! -d $W/data/$1 ] && mkdir -p $W/data && cp -r $f $W/data/$1 && touch $W/data/$1.staged; done
  ls $W/data
}
running_runs() { # runs started and not yet ended, from $W/times.txt (pgrep would also count loader workers)
  touch $W/times.txt; echo $(( $(grep -c " start " $W/times.txt) - $(grep -c " end " $W/times.txt) ))
}
wait_runs() { # until no bench_accuracy run is left (a run just started is given 5 s to appear)
  sleep 5; while pgrep -f "bench_accuracy.py run" > /dev/null; do sleep 3; done
}
machine() { # the GPU, driver, cores and torch of the machine, for the log
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch; print(torch.__version__)"
}
