# The launcher of the H200 accuracy and wall-time runs (docs/benchmarks.md, "Training"): every run goes through
# benchmarks/bench_accuracy.py in its own folder under $W/jobs (W=/root/w by default).
# On the GPU machine, from the repository root, with these ignored folders carried beside the checkout:
#   .dev/whl       wheels the machine lacks (faster-coco-eval; ultralytics + ultralytics-thop for the reference)
#   .dev/dataN/X   a copy of ../shared/datasets/X (one dataset per call: the 64 MiB transfer limit)
#   .dev/official  the official YOLOv9 source tree (git archive of WongKinYiu/yolov9), for --reference official
# A spec file lists the runs of a lease, one line each: the arguments of `job` (job.sh), e.g.
#   needs deeppcb
#   pcb-y9-s0 deeppcb yolov9-s 0 8
#   pcb-ul-s0 deeppcb yolov9-s 0 8 --reference ultralytics
# ("needs DATASET" waits until that dataset is staged). First call of a lease:
#   W=/root/w bash benchmarks/gpu_sweep/start.sh MAX my.spec      # at most MAX runs at once (1: each run alone)
# later calls: `W=/root/w bash benchmarks/gpu_sweep/poll.sh SECONDS TAG`, which waits, prints one line per run and
# packs results, per-epoch CSVs and log tails into $OUT/results-TAG.tgz. Spec files are per lease and not kept in
# the repository; the figures they produced are in docs/results/. SMOKE_ARGS is appended to every run (a CPU smoke
# test: SMOKE_ARGS="--epochs 1 --imgsz 96 --model gelan-t --workers 0").
# sourced by every device call: site packages from .dev/whl, a polars stand-in, paths
set -u
W=${W:-/root/w}
mkdir -p $W/jobs
export PYTHONUNBUFFERED=1 YOLO_OFFLINE=1
if [ ! -f $W/site/.ok ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $W/site .dev/whl/*.whl || exit 1
  mkdir -p $W/site/polars && printf 'def read_csv(*a, **k):\n    raise RuntimeError("polars stand-in")\n__version__ = "1.0.0"\n' > $W/site/polars/__init__.py
  touch $W/site/.ok
fi
# tracked and untracked-not-ignored files: the device's copy of .git may predate this checkout's last commits
if [ ! -d $W/code ]; then mkdir -p $W/code && git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t $W/code; fi
export PYTHONPATH=$W/site:$W/code
if [ -d .dev/official ] && [ ! -d $W/official ]; then cp -r .dev/official $W/official; fi
