#!/usr/bin/env bash
# One task of a job array: draws one shard of releases on each side of a neighboring pair with
# examples/exec/stdlib_laplace_count.py and writes $SHARD_DIR/a.TASK.jsonl (on D = [0.5, 0.5])
# and $SHARD_DIR/b.TASK.jsonl (on D' = [0.5, 0.5, 1.0]), SAMPLES releases each, in the exec
# protocol's line format. `audit test --samples-a ... --samples-b ...` merges the shards.
#
#   bash examples/exec/shard.sh TASK [SAMPLES]        # SAMPLES default 25000, SHARD_DIR default shards
#   sbatch --array=0-7 --wrap 'bash examples/exec/shard.sh $SLURM_ARRAY_TASK_ID'   # on Slurm
#
# Every shard of both sides gets its own seed (2·TASK on D, 2·TASK + 1 on D'): the audit's bounds
# assume releases independent across shards, so never reuse a seed. A shard is written to a
# temporary name and renamed when complete, so a failed task never leaves a partial shard behind.
set -euo pipefail
task=${1:?usage: shard.sh TASK [SAMPLES]}
samples=${2:-25000}
dir=${SHARD_DIR:-shards}
case $task$samples in *[!0-9]*) echo "shard.sh: TASK and SAMPLES must be non-negative integers" >&2; exit 2 ;; esac
mkdir -p "$dir"
prog=(python3 "$(dirname "$0")/stdlib_laplace_count.py" --epsilon 1)
draw() { # side dataset seed
  printf '{"dataset": %s, "samples": %d, "seed": %d}\n' "$2" "$samples" "$3" \
    | "${prog[@]}" > "$dir/$1.$task.jsonl.tmp"
  mv "$dir/$1.$task.jsonl.tmp" "$dir/$1.$task.jsonl"
}
draw a '[0.5, 0.5]' $((2 * task))
draw b '[0.5, 0.5, 1.0]' $((2 * task + 1))
