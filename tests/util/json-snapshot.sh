#!/usr/bin/env bash
# Writes the JSON of a fixed set of runs, one per kind of audit, to OUTDIR (one file per run), so
# that a refactoring can be checked to leave every mode's output byte-identical:
#   bash tests/util/json-snapshot.sh /tmp/before; (change the code); bash tests/util/json-snapshot.sh /tmp/after
#   diff -r /tmp/before /tmp/after
# Every run has fixed sample sizes and the default seed, so its JSON is deterministic (the
# wall-time fields are left out of --json output). Takes a few minutes on 2 cores. Runs the binary
# from CARGO_TARGET_DIR when that is set (else ./target), the directory cargo built it in.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: json-snapshot.sh OUTDIR}
mkdir -p "$out"
cargo build --release --quiet
a=${CARGO_TARGET_DIR:-target}/release/audit
run() {
    local name=$1
    shift
    # Exit codes 0 and 1 are verdicts; anything else is a failure of the snapshot.
    local code=0
    "$a" "$@" >"$out/$name.json" 2>"$out/$name.stderr" || code=$?
    if [ "$code" -gt 1 ]; then
        echo "json-snapshot: $name exited $code: $(head -c 400 "$out/$name.stderr")" >&2
        exit 1
    fi
    echo "$code" >"$out/$name.code"
    rm -f "$out/$name.stderr"
}
run fixed-pair run --mechanism laplace-sum --samples 20000 --json --no-report
run fixed-pair-buggy run --mechanism laplace-sum-ignores-range --samples 20000 --json --no-report
run profile run --mechanism dpsgd-scaled-noise --claim gdp:0.268051 --samples 20000 --json --no-report
run dpsgd run --mechanism dpsgd --samples 20000 --json --no-report
run search run --mechanism laplace-sum-ignores-range --finder random --trials 4 --search-samples 2000 --confirm 1 --samples 20000 --json --no-report
run sequential run --mechanism laplace-sum-ignores-range --sequential --json --no-report
run bayesian run --mechanism bdp-gaussian-sum-excludes-outliers --samples 20000 --json --no-report
run exec run --exec 'python3 examples/exec/textbook_laplace_sum.py' --claim pure:1 --record-range -5:5 --dataset-size 10 --trials 4 --search-samples 2000 --confirm 1 --samples 20000 --json --no-report
run one-run one-run --canaries 1000 --param noise_scale=0.3 --json --no-report
run sweep sweep --mechanism dpsgd --param noise_scale=0.5:1.0:0.25 --repeats 2 --samples 20000 --json --no-report
run accountant accountant --sampling-rate 0.01 --noise-multiplier 1.1 --steps 100 --delta 1e-5 --json
# A fixed directory, so that the shard paths recorded in the JSON are the same in every snapshot.
shards=/tmp/dp-audit-json-snapshot-shards
rm -rf "$shards" && mkdir -p "$shards"
trap 'rm -rf "$shards"' EXIT
"$a" sample --mechanism laplace-sum --side a --shard-index 0 --samples 20000 --out "$shards/a.jsonl" >/dev/null 2>&1
"$a" sample --mechanism laplace-sum --side b --shard-index 0 --samples 20000 --out "$shards/b.jsonl" >/dev/null 2>&1
run test test --samples-a "$shards/a.jsonl" --samples-b "$shards/b.jsonl" --claim pure:1 --json --no-report
echo "json-snapshot: $(ls "$out"/*.json | wc -l) runs written to $out"
