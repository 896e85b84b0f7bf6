# The launcher of the session-6 H200 accuracy runs (docs/benchmarks.md, "NVIDIA H200, session 6").
# On the GPU machine, from the repository root, with these ignored folders carried beside the checkout:
#   .dev/whl       wheels the machine lacks (faster-coco-eval; ultralytics + ultralytics-thop for the reference)
#   .dev/dataN/X   a copy of ../shared/datasets/X (one dataset per call: the 64 MiB transfer limit)
#   .dev/official  the official YOLOv9 source tree (git archive of WongKinYiu/yolov9), for --reference official
# queue.sh MAX SPEC starts the runs a spec file lists, at most MAX at a time (s7.spec: session 7; s8.spec: the next
# lease). neu.sh starts four y9 NEU-DET runs; deeppcb.sh four DeepPCB runs (PARITY=1: two --hyp official runs,
# OFFICIAL=1: train_dual.py seed 1) and alone.sh, which waits for every run to end, then trains y9 and
# Ultralytics one after the other, each alone on the machine (the wall-time comparison). Every run goes through
# benchmarks/bench_accuracy.py in its own folder under $W/jobs. poll.sh SECONDS TAG waits, prints one line per
# run and packs results, per-epoch CSVs and log tails into $OUT/results-TAG.tgz. SMOKE_ARGS is appended to every
# run (a CPU smoke test: SMOKE_ARGS="--epochs 1 --imgsz 96 --model gelan-t --workers 0").
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
