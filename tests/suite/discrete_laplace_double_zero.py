#!/usr/bin/env python3
"""Discrete Laplace count drawn as (random sign) x (geometric magnitude), without rejecting -0.

Implements: |D| + S * M with S uniform on {-1, +1} and M ~ Geometric on {0, 1, 2, ...},
  P(M = m) = (1 - a) a^m, a = e^{-eps}. The correct sampler rejects (S = -1, M = 0) and
  redraws; without that rejection 0 is drawn with twice its probability.
Source: Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS
  2020), Algorithm 2 (discrete Laplace): "if B = 1 and Y = 0, reject" exists exactly to avoid
  double-counting zero.
Claim: pure:1, records in [0, 1], dimension 1, 20 records, add-remove (the count of records).
True privacy loss: eps + ln 2 = 1.693. P(noise = 0) = 1 - a, P(noise = k) = (1 - a) a^|k| / 2
  for k != 0, so P_D(output = n) / P_D'(output = n) = P(0) / P(-1) = 2/a = 2 e^eps for
  |D| = n, |D'| = n + 1 (an event of probability 1 - e^-1 = 0.63 under D).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    n = len(req["dataset"])
    alpha = math.exp(-a.epsilon)
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        m = 0
        while rand() < alpha:  # P(M >= m + 1 | M >= m) = alpha
            m += 1
        s = -1 if rand() < 0.5 else 1
        out.append(str(n + s * m))  # BUG: (s = -1, m = 0) is not rejected
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
