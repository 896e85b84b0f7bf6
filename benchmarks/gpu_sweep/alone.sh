W=${W:-/root/w}; cd $W/code 2>/dev/null || true
source $W/job.sh
export PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 PYTHONPATH=$W/site:$W/code
while pgrep -f "bench_accuracy.py run" > /dev/null; do sleep 5; done
echo "$(date +%s) phaseA alone begins" >> $W/times.txt
job A-y9-v9s-s0 deeppcb yolov9-s 0 8
sleep 5; while pgrep -f "bench_accuracy.py run" > /dev/null; do sleep 3; done
job A-ul-s0 deeppcb yolov9-s 0 8 --reference ultralytics
sleep 5; while pgrep -f "bench_accuracy.py run" > /dev/null; do sleep 3; done
echo "$(date +%s) phaseA done" >> $W/times.txt; touch $W/phaseA.done
