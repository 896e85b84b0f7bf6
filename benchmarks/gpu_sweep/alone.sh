W=${W:-/root/w}; cd $W/code 2>/dev/null || true
source $W/job.sh
export PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 PYTHONPATH=$W/site:$W/code
wait_runs
echo "$(date +%s) alone runs begin" >> $W/times.txt
job A-y9-v9s-s0 deeppcb yolov9-s 0 8
wait_runs
job A-ul-s0 deeppcb yolov9-s 0 8 --reference ultralytics
wait_runs
echo "$(date +%s) alone runs done" >> $W/times.txt
