#!/usr/bin/env python3
"""A noisy count suppressed when the TRUE count is small (k-anonymity-style suppression mixed
with DP).

Implements: c = number of records >= 0.5; if c >= 5 release (1, c + G1 - G2) with two-sided
  geometric noise a = e^{-eps}, else (0, 0) ("too few records to publish").
Source: the suppression rule of statistical agencies' tables applied before the noise, a known
  mistake when adding DP to an existing release pipeline: the decision to publish depends on the
  true count (Google's differential-privacy library documents thresholding on the *noisy* count
  instead; see also Wilson et al., "Differentially Private SQL with Bounded User Contribution",
  PoPETs 2020, §4 on thresholds).
Claim: pure:1, records in [0, 1], dimension 1, 20 records, add-remove.
True privacy loss: infinite. On D with exactly 4 records >= 0.5 the output is (0, 0) with
  probability 1; adding one such record publishes (1, ·) with probability 1.
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
        if c >= a.threshold:  # BUG: decided on the true count
            out.append("[1, %d]" % (c + g1 - g2))
        else:
            out.append("[0, 0]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
