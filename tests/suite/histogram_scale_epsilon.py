#!/usr/bin/env python3
"""Noisy histogram whose Laplace scale is eps instead of 1/eps (StatDP's histogram_eps).

Implements: records in [0, 5) are binned into 5 unit-width bins (floor, clamped to 0..4);
  release the 5 counts each + Lap(eps) (the bug; the correct scale is 1/eps).
Source: Ding et al., "Detecting Violations of Differential Privacy" (StatDP, CCS 2018),
  incorrect variant histogram_eps in https://github.com/cmla-psu/statdp
  (statdp/algorithms.py: "using (epsilon) noise instead of (1 / epsilon)").
Claim: pure:0.5, records in [0, 5], dimension 1, 50 records, add-remove.
True privacy loss: adding a record raises one bin by 1 and leaves the others; the noise scale
  is eps = 0.5, so the true eps = 1 / 0.5 = 2 (= 1/eps, four times the claim), attained on
  every output whose changed bin is beyond both counts (probability ~1/2 for each tail).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=0.5)
    ap.add_argument("--bins", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    counts = [0] * a.bins
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        counts[min(max(int(math.floor(x)), 0), a.bins - 1)] += 1
    scale = a.epsilon  # BUG: should be 1 / epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        vals = []
        for c in counts:
            u = rand() - 0.5
            vals.append(repr(c - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
        out.append("[" + ", ".join(vals) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
