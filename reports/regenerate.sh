#!/usr/bin/env bash
# Regenerates the example gallery in reports/examples/ (one folder per report, plus index.html).
#
#   bash reports/regenerate.sh        # from anywhere; builds the release binary first (~3 min cold)
#
# Every report is deterministic for its seed except the recorded wall time. The new gallery is
# built in reports/examples.new and swapped in only when every command succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
AUDIT="${CARGO_TARGET_DIR:-target}/release/audit"
OUT=reports/examples
NEW="$OUT.new"
rm -rf "$NEW"
mkdir -p "$NEW"

# Runs `audit ARGS… --report-dir $NEW`; exit 0 (no violation) and 1 (violation) are both fine.
audit() {
  local rc=0
  "$AUDIT" "$@" --report-dir "$NEW" --quiet >/dev/null || rc=$?
  if [ "$rc" -gt 1 ]; then
    echo "regenerate.sh: audit $* failed (exit $rc)" >&2
    exit 1
  fi
}

# A buggy mechanism: Laplace noise scaled to 1/ε, ignoring the record range (violation found).
audit run --mechanism laplace-sum-ignores-range
# A correct mechanism: the analytic Gaussian sum (no violation found, and what that does not prove).
audit run --mechanism gaussian-sum-analytic
# A profile claim: the same Gaussian sum claimed as 0.1-GDP, which it is not (δ(ε) figure).
audit run --mechanism gaussian-sum-analytic --claim gdp:0.1 --samples 100000
# The flagship: one step of DP-GD whose claim comes from its privacy ledger (no violation found),
# and the same step with the noise halved (violation found).
audit run --mechanism dpsgd
audit run --mechanism dpsgd-scaled-noise
# The anytime-valid sequential audit: stops as soon as the betting wealth crosses 1/β.
audit run --mechanism dpsgd-scaled-noise --sequential
# A Mironov-style floating-point leak, visible only through the float-bits output transform.
audit run --mechanism laplace-sum-coarse-noise
# Sparse vector that releases its noisy answers (svt3): the evidence is in output coordinate 19,
# and the distribution figures follow the coordinates the event uses.
audit run --mechanism svt3
# The noise of the Laplace sum ignores the range R: correct at R = 1, buggy above.
audit sweep --mechanism laplace-sum-ignores-range --param range=1:3:0.25 --repeats 10 --samples 20000
# DP-SGD with its noise scaled by noise_scale (correct at 1): the scaled-noise figure.
if "$AUDIT" list | grep -q '^dpsgd-scaled-noise '; then
  audit sweep --mechanism dpsgd-scaled-noise --param noise_scale=0.5:1.1:0.05 --repeats 10 --samples 100000
fi
# DP-SGD as it is run (q = 0.01, z = 1.1, 100 steps) releasing every iterate, audited through the
# checkpoints:1 transform, against the PLD accountant's (ε, δ) point claim and its whole profile.
DPSGD_RUN="--param sampling_rate=0.01 --param noise_multiplier=1.1 --param steps=100 --param release_every=1"
# shellcheck disable=SC2086
audit sweep --mechanism dpsgd $DPSGD_RUN --param noise_scale=0.5:1:0.1 --repeats 10 --samples 100000
# shellcheck disable=SC2086
audit sweep --mechanism dpsgd $DPSGD_RUN --param profile_claim=1 --param noise_scale=0.5:1:0.1 --repeats 10 --samples 100000
# One training run with 30 000 canaries, the noise halved: the Gaussian-DP bound of the guessing game.
audit one-run --canaries 30000 --param noise_scale=0.5
# Bayesian DP: DP-SGD whose accountant was fed the data without its outliers (joint-law bound).
audit run --mechanism bdp-dpsgd-excludes-outliers --data examples/bdp-data.txt
# Position-based microbatches accounted per example: found without the witness by the portfolio.
audit run --mechanism dpsgd-microbatches-add-remove --finder portfolio
# Shuffled fixed-size batches accounted as Poisson: detections over the noise multiplier.
audit sweep --mechanism dpsgd-shuffled-accounted-as-poisson --param noise_multiplier=0.4:2:0.2 --repeats 10 --samples 100000
# The DP-Auditorium post's experiment over the whole catalogue: detections per entry × tester × ε
# on the witness pairs (about 15 minutes on 2 cores).
audit bench table

rm -rf "$OUT.old"
if [ -d "$OUT" ]; then mv "$OUT" "$OUT.old"; fi
mv "$NEW" "$OUT"
rm -rf "$OUT.old"
echo "gallery: $OUT/index.html ($(du -sh "$OUT" | cut -f1))"
