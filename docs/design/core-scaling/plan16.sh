#!/usr/bin/env bash
# The default program audit's plan against what it ran, at --jobs J (default 16), budget 30 s.
#   bash docs/design/core-scaling/plan16.sh [AUDIT_BINARY] [J]
A=${1:-target/release/audit}
J=${2:-16}
for prog in "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --startup 0.4" "python3 docs/design/core-scaling/np_laplace_halved.py"; do
  s=$(date +%s.%N)
  "$A" run --exec "$prog" --claim pure:1 --record-range 0:10 --dataset-size 10 --budget 30 --no-report --json --jobs "$J" > /tmp/p.json 2> /tmp/p.err
  rc=$?
  e=$(date +%s.%N)
  grep '^audit: plan' /tmp/p.err | cut -c1-200
  python3 -c "import json; r=json.load(open('/tmp/p.json')); e=r.get('effort') or r.get('result',{}).get('effort') or {}; print('jobs $J', '$prog'[:60], 'planned', e.get('trials_planned'), 'run', e.get('trials_run'), 'rc $rc', round($e-$s,1), 's')"
done
