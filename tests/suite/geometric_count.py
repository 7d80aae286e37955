#!/usr/bin/env python3
"""Geometric mechanism on a count (correct, meets its claim with equality).

Implements: |D| + G1 - G2 with G1, G2 i.i.d. geometric on {0, 1, ...}, P(G = m) = (1 - a) a^m,
  a = e^{-eps}: the two-sided geometric noise P(k) = (1 - a)/(1 + a) a^|k|.
Source: Ghosh, Roughgarden, Sundararajan, "Universally Utility-Maximizing Privacy Mechanisms"
  (STOC 2009); the integer-valued counterpart of the Laplace mechanism used by, e.g., Google's
  differential-privacy library and OpenDP for integer counts.
Claim: pure:1, records in [0, 1], dimension 1, 20 records, add-remove.
True privacy loss: exactly eps = 1: for |D'| = |D| + 1, P_D(k)/P_D'(k) = a^{|k-n|-|k-n-1|}
  = e^eps for every output k <= n (equality on half the outputs). The output is an integer,
  so no floating-point porosity.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    n = len(req["dataset"])
    log_alpha = -a.epsilon
    rand, log, floor = rng.random, math.log, math.floor
    out = []
    for _ in range(int(req["samples"])):
        # Inversion: floor(ln(U)/ln(a)) is geometric with P(G >= m) = a^m, U uniform on (0, 1].
        g1 = int(floor(log(1.0 - rand()) / log_alpha))
        g2 = int(floor(log(1.0 - rand()) / log_alpha))
        out.append(str(n + g1 - g2))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
