#!/usr/bin/env bash
# Issue 49's soundness sweep of the new defaults: the default program audit (the planner, the
# deadline, the portfolio's new order, one-call trials) on correct programs, many seeds, at
# β = 0.05 so that a broken β split would show. Each run is `audit run --exec` with default
# flags except --budget (short, so that the time-fitted confirmations and the deadline are
# exercised) and --failure-probability. A run reporting a violation counts as a false alarm.
# Usage: docs/runs/issue-49/soundness.sh SEEDS BUDGET   (from the repository root)
set -u
seeds=${1:-30}
budget=${2:-8}
audit=target/release/audit
for prog in \
  "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1|pure:1|0:10|10|" \
  "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1|pure:1|0:10|10|--exec-datasets 1000" \
  "python3 examples/exec/slow/mean_true_n.py --fixed --startup 0 --cost-ms 0|pure:1|0:10|10|"; do
  IFS='|' read -r cmd claim range size extra <<<"$prog"
  flagged=0; total=0
  for ((s = 0; s < seeds; s++)); do
    # shellcheck disable=SC2086
    "$audit" run --exec "$cmd" --claim "$claim" --record-range "$range" --dataset-size "$size" \
      --budget "$budget" --failure-probability 0.05 --seed "$s" --no-report -q $extra >/dev/null 2>&1
    rc=$?
    total=$((total + 1))
    if [ "$rc" -eq 1 ]; then flagged=$((flagged + 1)); fi
    if [ "$rc" -eq 2 ]; then echo "seed $s: exit 2 ($cmd)"; fi
  done
  echo "$cmd ${extra}: $flagged of $total runs flagged at β = 0.05 (budget $budget s)"
done
