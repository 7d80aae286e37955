#!/usr/bin/env python3
"""A noisy count suppressed when the NOISY count is small (correct).

Implements: c = number of records >= 0.5; n = c + G1 - G2 with two-sided geometric noise
  a = e^{-eps}; release (1, n) if n >= 5, else (0, 0).
Source: thresholding on the noisy value, as Google's differential-privacy library and
  Wilson et al., "Differentially Private SQL with Bounded User Contribution" (PoPETs 2020) do.
Claim: pure:1, records in [0, 1], dimension 1, 20 records, add-remove.
True privacy loss: at most eps = 1: the release is a function of the geometric mechanism's
  output n alone (post-processing), and the geometric mechanism on a count is eps-DP
  (Ghosh, Roughgarden, Sundararajan, STOC 2009). Equality on outputs (1, n) with n >= c + 1.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--threshold", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    c = sum(1 for r in req["dataset"] if float(r[0] if isinstance(r, list) else r) >= 0.5)
    log_alpha = -a.epsilon
    rand, log, floor = rng.random, math.log, math.floor
    out = []
    for _ in range(int(req["samples"])):
        g1 = int(floor(log(1.0 - rand()) / log_alpha))
        g2 = int(floor(log(1.0 - rand()) / log_alpha))
        n = c + g1 - g2
        out.append("[1, %d]" % n if n >= a.threshold else "[0, 0]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
