#!/usr/bin/env python3
"""A DP median by noisy binary search; by default every comparison gets the whole budget.

Implements: records clamped to [0, 1]; 8 halvings of [0, 1]: at midpoint m, compare
  #{x ≤ m} + Laplace(1/eps_step) with n/2 and keep the half that holds the median; release the
  final midpoint (one of 256 dyadic values). Each count has sensitivity 1 under replace-one, so
  the 8 comparisons must share the budget, eps_step = eps/8 (`--split 1`, correct); the buggy
  default spends eps on every comparison.
Source: noisy binary search for quantiles (Dwork & Lei, STOC 2009, the search over a bounded
  range; the per-comparison budget of noisy binary search, Karp & Kleinberg, SODA 2007, read
  with basic composition, Dwork & Roth 2014, Theorem 3.14): every comparison reads the data.
Claim: pure:1, records in [0, 1], dimension 1, 20 records, replace-one.
True privacy loss: default: up to 8 eps = 8 (replacing a record 0 by 1 lowers every count by
  one, and the released midpoint determines every comparison's outcome, a product of 8 ratios
  each up to e^eps); `--split 1`: at most eps = 1 (8 eps/8-DP comparisons composed, the release
  a function of their outcomes).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--split", type=int, default=0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0) for r in req["dataset"]]
    steps = 8
    eps_step = a.epsilon / steps if a.split else a.epsilon  # BUG unless --split 1
    b = 1.0 / eps_step
    half = len(xs) / 2.0
    out = []
    for _ in range(int(req["samples"])):
        lo, hi = 0.0, 1.0
        for _ in range(steps):
            m = 0.5 * (lo + hi)
            u = rng.random() - 0.5
            z = -b * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
            if sum(1 for x in xs if x <= m) + z >= half:
                hi = m
            else:
                lo = m
        out.append(repr(0.5 * (lo + hi)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
