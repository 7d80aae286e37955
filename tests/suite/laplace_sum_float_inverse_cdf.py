#!/usr/bin/env python3
"""Bounded Laplace sum with the textbook inverse-CDF sampler on uniform doubles (Mironov 2012).

Implements: clamp records to [-5, 5], sum (sensitivity max(|L|, |U|) = 5 under add/remove, the
  right one), add Lap(5/eps) drawn as -b * sign(u) * ln(1 - 2|u|), u = random() - 1/2 on the
  2^-53 grid, everything in double precision: correct in the real-number model.
Source: Ilya Mironov, "On Significance of the Least Significant Bits for Differential
  Privacy", ACM CCS 2012: the doubles reachable as f(D) + noise depend on f(D); with f(D) and
  f(D') in different binades (e.g. 3.7 and 6.1) the outputs near 0 are sums whose low bits are
  those of f: every output y with |y| < 1/2 lies on the grid ulp(f(D)) = 2^-51 under D but on
  ulp(f(D')) = 2^-50 under D' (Sterbenz: y = f + n exactly when n ~ -f).
Claim: pure:1, records in [-5, 5], dimension 1, 10 records, add-remove.
True privacy loss: infinite (floating-point model). With f(D) in [2, 4) and f(D') in [4, 8),
  the event "|y| < 1/2 and y * 2^50 is not an integer" has probability ~P(|y| < 1/2) * 0.7 (measured: 3.3 % for f(D) = 3.7, f(D') = 6.1)
  under D and 0 under D' (the 6 lowest mantissa bits of such a small y are 0 or 32 under D,
  always 0 under D'). In the real-number model the loss is exactly eps = 1.
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
        total += min(max(float(r[0] if isinstance(r, list) else r), a.lower), a.upper)
    scale = max(abs(a.lower), abs(a.upper)) / a.epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(total - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
