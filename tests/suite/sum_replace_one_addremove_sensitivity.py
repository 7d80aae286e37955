#!/usr/bin/env python3
"""Bounded Laplace sum whose sensitivity is the add/remove one, run under replace-one.

Implements: clamp each record to [L, U] = [-5, 5], sum, add Lap(max(|L|, |U|) / eps).
  max(|L|, |U|) is the sensitivity of a clamped sum when a record is ADDED or REMOVED
  (unbounded DP); when a record is REPLACED (bounded DP, the relation the user audits under,
  dataset size public) the sensitivity is U - L.
Source: the bounded-vs-unbounded DP sensitivity confusion, a case of the sensitivity
  underestimation studied by Casacuberta, Shoemate, Vadhan, Wagaman, "Widespread
  Underestimation of Sensitivity in Differentially Private Libraries and How to Fix It"
  (CCS 2022, arXiv:2207.10635), which gives the bounded sum's sensitivity under both
  relations ("change-one": U - L; "insert-delete": max(|L|, |U|)).
Claim: pure:1 (eps = 1), records in [-5, 5], dimension 1, 10 records, replace-one.
True privacy loss: replacing a record 5 by -5 moves the sum by U - L = 10 while the Laplace
  scale is 5 / eps = 5, so the true eps = 10 / 5 * eps = 2 (twice the claim; attained on the
  tails of every output set beyond both means).
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
    total = 0.0
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        total += min(max(x, a.lower), a.upper)
    scale = max(abs(a.lower), abs(a.upper)) / a.epsilon  # BUG under replace-one: U - L
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(total - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
