#!/usr/bin/env python3
"""Bounded integer sum accumulated in a 32-bit signed integer that wraps around.

Implements: records in [0, 1e9] (e.g. amounts in cents) are clamped and rounded to integers,
  summed in a 32-bit two's-complement accumulator (wrap-around on overflow, as C/C++/Java/
  NumPy int32 arithmetic does), and released with Lap(U/eps), U = 1e9 the add/remove
  sensitivity of the ideal integer sum.
Source: Casacuberta, Shoemate, Vadhan, Wagaman, "Widespread Underestimation of Sensitivity in
  Differentially Private Libraries and How to Fix It" (ACM CCS 2022, arXiv:2207.10635): integer
  overflow (and float rounding) in library sums makes the implemented sum's sensitivity far
  larger than the idealised U. The libraries they study use 64-bit types; this program uses
  a 32-bit accumulator so that the overflow is reachable with a realistic range and 50
  records.
Claim: pure:1, records in [0, 1e9], dimension 1, 50 records, add-remove.
True privacy loss: the wrapped sum S_w lies in [-2^31, 2^31); adding a record x wraps it when
  S_w + x >= 2^31, and then the output mean moves by x - 2^32 (by up to 2^32 - 1 in absolute
  value, e.g. x = 1 added to S_w = 2^31 - 1). The true sensitivity is 2^32 - 1, so
  eps_true = (2^32 - 1)/1e9 * eps = 4.29 (against the claimed 1).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--upper", type=float, default=1e9)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    acc = 0
    for r in req["dataset"]:
        x = int(round(min(max(float(r[0] if isinstance(r, list) else r), 0.0), a.upper)))
        acc = (acc + x + 2**31) % 2**32 - 2**31  # BUG: int32 wrap-around
    total = float(acc)
    scale = a.upper / a.epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(total - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
