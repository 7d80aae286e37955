#!/usr/bin/env bash
# Measurement of the streamed `audit test` at 10^8 releases per side (issue 18's target:
# peak memory < 1 GB, ≥ 10^7 releases/s per core on binary shards).
#
#   cargo build --release --bin audit
#   bash examples/shards/measure_1e8.sh [DIR]      # DIR default /tmp/dp-audit-1e8, removed at the end
#
# Writes 16 binary shards of 6.25·10^6 releases per side of gaussian-sum-analytic (800 MB per
# side), runs `audit test` on all of them under /usr/bin/time -v (peak RSS = "Maximum resident
# set size"; releases/s per core = 2·10^8 / (user + system CPU seconds)), then checks on the
# first 2 shards per side (1.25·10^7 releases, which fit in memory) that the streamed and the
# in-memory test print the same JSON report, with --max-train-rows large enough for the
# tester's own 20 % training split.
set -euo pipefail
audit=${AUDIT:-$(dirname "$0")/../../target/release/audit}
dir=${1:-/tmp/dp-audit-1e8}
mkdir -p "$dir"
trap 'rm -f "$dir"/*.bin "$dir"/*.json' EXIT
for side in a b; do
  for i in $(seq 0 15); do
    "$audit" sample --mechanism gaussian-sum-analytic --side $side --samples 6250000 \
      --seed 42 --shard-index $i --out "$dir/$side.$i.bin" > /dev/null
  done
done
shards() { for i in $(seq 0 "$2"); do printf -- '--samples-%s %s ' "$1" "$dir/$1.$i.bin"; done; }
echo "== audit test, 10^8 releases per side, streamed"
/usr/bin/time -v "$audit" test $(shards a 15) $(shards b 15) --claim approx:1:1e-5 --no-report --json \
  > "$dir/big.json" 2> "$dir/big.time" || true
grep -E "User time|System time|Elapsed|Maximum resident" "$dir/big.time"
python3 -c "
import json, re, sys
d = json.load(open('$dir/big.json')); t = open('$dir/big.time').read()
cpu = sum(float(re.search(k + r' \(seconds\): ([0-9.]+)', t).group(1)) for k in ('User time', 'System time'))
print('verdict', d['verdict'], 'bound', d['bounds'][0]['value'], 'samples', d['samples_a'], d['samples_b'])
print('releases/s per core (both sides / CPU seconds): %.3g' % ((d['samples_a'] + d['samples_b']) / cpu))
"
echo "== 1.25·10^7 per side: streamed vs in memory"
"$audit" test $(shards a 1) $(shards b 1) --claim approx:1:1e-5 --no-report --json --stream \
  --max-train-rows 2500000 > "$dir/s.json" || true
"$audit" test $(shards a 1) $(shards b 1) --claim approx:1:1e-5 --no-report --json --in-memory \
  > "$dir/m.json" || true
cmp "$dir/s.json" "$dir/m.json" && echo "same report (verdict and bound) streamed and in memory"
