#!/usr/bin/env python3
"""Laplace mean that clamps to [-5, 5] but uses the sensitivity of data in [0, 1].

Implements: clamp records to [L, U] = [-5, 5], mean over the public n, add Lap(1/(n eps)):
  the sensitivity 1/n of a mean of values in a unit-width range, not (U - L)/n.
Source: sensitivity underestimation of a clamped statistic, the bug class named by
  Casacuberta, Shoemate, Vadhan, Wagaman, "Widespread Underestimation of Sensitivity in
  Differentially Private Libraries and How to Fix It" (CCS 2022, arXiv:2207.10635) (their
  library cases are arithmetic ones; see int_sum_overflow.py), in its simplest form: a
  sensitivity left at a unit default while the clamping range is wider (the exec twin of
  dp-audit's catalogue entry laplace-sum-ignores-range).
Claim: pure:1, records in [-5, 5], dimension 1, 10 records, replace-one.
True privacy loss: replacing -5 by 5 moves the mean by (U - L)/n = 1 while the scale is
  1/(n eps) = 0.1: eps_true = 10 eps = 10.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=-5.0)
    ap.add_argument("--upper", type=float, default=5.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(float(r[0] if isinstance(r, list) else r), a.lower), a.upper)
          for r in req["dataset"]]
    n = max(len(xs), 1)
    mean = sum(xs) / n
    scale = 1.0 / (n * a.epsilon)  # BUG: should be (upper - lower) / (n * epsilon)
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(mean - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
