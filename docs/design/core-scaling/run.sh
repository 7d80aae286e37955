#!/usr/bin/env bash
# How the audit scales with cores: one script, run on a quiet 16-core machine with a release
# binary built elsewhere (`cargo build --release`, then carry target/release/audit).
#   bash docs/design/core-scaling/run.sh [AUDIT_BINARY] [OUT_DIR]
# Prints one table row per measurement (median of R runs, wall seconds) and the sha256 of every
# JSON record, which must be the same at every thread count.
set -u
A=${1:-target/release/audit}
O=${2:-/tmp/core-scaling}
R=${R:-3}
T_LIST=${T_LIST:-"1 2 4 8 16"}
mkdir -p "$O"
echo "cores: $(nproc); $(uname -m); python: $(python3 -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)' 2>&1)"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # label, then the command; R runs, prints median wall and the record hash
  local label=$1; shift
  local ws=()
  for r in $(seq "$R"); do
    local s=$(date +%s.%N)
    "$@" > "$O/out.json" 2> "$O/err.txt"
    local rc=$?
    local e=$(date +%s.%N)
    ws+=("$(awk -v a="$s" -v b="$e" 'BEGIN{print b-a}')")
  done
  local m=$(printf '%s\n' "${ws[@]}" | median)
  printf '%-58s %8.2f s  rc %d  sha %s\n' "$label" "$m" "$rc" "$(grep -v '"elapsed\|seconds' "$O/out.json" | sha256sum | cut -c1-12)"
}
# A. audit test on shards, the default two layers.
for n in 1000000 10000000; do
  for s in a b; do
    [ -f "$O/$n.$s.bin" ] || "$A" sample --mechanism laplace-sum --side $s --samples $n --shard-index 0 --out "$O/$n.$s.bin" >/dev/null 2>&1
  done
  for t in $T_LIST; do
    timeit "test n=$n threads=$t" env RAYON_NUM_THREADS=$t "$A" test --samples-a "$O/$n.a.bin" --samples-b "$O/$n.b.bin" --claim pure:1 --json --no-report
  done
done
# B. a fixed-size program search (48 trials, both layers) on a program with a 0.1 s start-up.
P="python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --startup 0.1"
for t in $T_LIST; do
  R=1 timeit "exec search 48 trials jobs=$t" "$A" run --exec "$P" --claim pure:1 --record-range 0:10 --dataset-size 10 --trials 48 --search-samples 2000 --samples 50000 --no-report --json --jobs $t -q
done
# C. the default program audit (budget 30 s) on a numpy program with a real bug, and on the
# start-up-0.4 s clamped mean, correct and buggy (noise sized for 10 rows): trials run at 2 and 16 jobs.
for t in 2 16; do
  for prog in "python3 docs/design/core-scaling/np_laplace_halved.py" "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --startup 0.4" "python3 examples/exec/clamped_mean_min_rows.py --startup 0.4"; do
    s=$(date +%s.%N)
    "$A" run --exec "$prog" --claim pure:1 --record-range 0:10 --dataset-size 10 --budget 30 --no-report --json --jobs $t -q > "$O/c.json" 2>/dev/null
    rc=$?
    e=$(date +%s.%N)
    tr=$(python3 -c "import json,sys; r=json.load(open('$O/c.json')); e=r.get('effort') or r.get('result',{}).get('effort') or {}; print(json.dumps({k: e[k] for k in list(e)[:6]}))" 2>&1 | cut -c1-160)
    printf 'default audit jobs=%-2s %-70s %6.1f s rc %d %s\n' "$t" "$prog" "$(awk -v a="$s" -v b="$e" 'BEGIN{print b-a}')" "$rc" "$tr"
  done
done
# D. a catalogue search (random finder, 40 trials).
for t in $T_LIST; do
  timeit "catalogue search laplace-sum 40 trials jobs=$t" "$A" run --mechanism laplace-sum --finder random --trials 40 --search-samples 20000 --no-report --json --jobs $t -q
done
