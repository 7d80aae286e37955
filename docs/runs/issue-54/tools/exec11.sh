#!/bin/bash
# default exec audits (budget 60 s, seed 0): idle or busy (two python busy loops beside)
LABEL=$1; O=/work/m111/exec-$LABEL; mkdir -p $O; cd /work/main
A=/work/audit-s11i
pids=""
if [ "$LABEL" = busy ]; then
  python3 -c 'while True: pass' & pids="$pids $!"
  python3 -c 'while True: pass' & pids="$pids $!"
fi
run() { name=$1; shift; s=$(date +%s.%N); "$A" run "$@" --no-report > $O/$name.out 2> $O/$name.err; rc=$?; e=$(date +%s.%N); echo "$name rc=$rc wall=$(echo "$e - $s" | bc) s" >> $O/summary.txt; }
: > $O/summary.txt
run textbook --exec 'python3 examples/exec/textbook_laplace_sum.py' --claim pure:1 --record-range -5:5 --dataset-size 10
run slow --exec 'python3 examples/exec/textbook_laplace_sum.py --noise-factor 0.5 --cost-us 300' --claim pure:1 --record-range -5:5 --dataset-size 10
run numpy --exec '/work/dpa-venv/bin/python /work/tools/np_mean.py' --claim pure:1 --record-range 0:10 --dataset-size 10
[ -n "$pids" ] && kill $pids
