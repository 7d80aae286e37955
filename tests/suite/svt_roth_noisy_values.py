#!/usr/bin/env python3
"""Sparse vector technique that outputs the noisy query value (Lyu-Su-Li Algorithm 3).

Implements: rho = Lap(2/eps), nu_i = Lap(2c/eps) (eps1 = eps2 = eps/2, c*Delta/eps2); on a
  positive answer it releases q_i + nu_i; stops after c positives. Output: 5 flags (1 above,
  0 below, -1 unanswered) then 5 values (q_i + nu_i for a positive answer, else 0).
Source: Lyu, Su, Li, PVLDB 2017, Algorithm 3 (from Roth's 2011 lecture notes), shown not to be
  eps'-DP for any finite eps' as the number of queries grows.
Claim: pure:1, records in [-1, 1]^5 (a user's scores for 5 items), dimension 5, 10 records,
  add-remove; queries: the 5 column sums (sensitivity 1 each), threshold T = 0, c = 1.
True privacy loss: k*eps/(2c) = 2.5 for k = 5 queries. Given rho, the density of the output
  (0, 0, 0, 0, 1; value a) is prod_{i<5} F(T + rho - q_i) * f(a - q_5) * 1[a >= T + rho],
  F, f the Lap(2) CDF and density. With D' = D + (1, 1, 1, 1, -1), each F ratio is e^{1/2} when
  T + rho <= q_i and the f ratio is e^{1/2} when a <= q_5 - 1; the indicator does not depend on
  the data. On outputs with a <= min(q_1..q_4, q_5 - 1) every rho in the integral satisfies
  T + rho <= a <= q_i, so the ratio is exactly e^{5/2}: eps_true = 2.5 (upper bound: the
  pointwise product of the 5 factors).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--threshold", type=float, default=0.0)
    ap.add_argument("--cutoff", type=int, default=1)
    ap.add_argument("--queries", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    k, eps, T, c = a.queries, a.epsilon, a.threshold, a.cutoff
    # Query i: the sum of coordinate i over the records, each coordinate clamped to [-1, 1]
    # (sensitivity 1 per query under add/remove).
    q = [0.0] * k
    for r in req["dataset"]:
        r = r if isinstance(r, list) else [r]
        for i in range(k):
            q[i] += min(max(float(r[i] if i < len(r) else 0.0), -1.0), 1.0)
    rand, log, copysign = rng.random, math.log, math.copysign

    def lap(b):
        if b == 0.0:
            return 0.0
        u = rand() - 0.5
        return -b * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))

    out = []
    for _ in range(int(req["samples"])):
        rho = lap(2.0 / eps)
        flags, vals, hits = [], [], 0
        for i in range(k):
            if hits >= c:
                flags.append(-1); vals.append(0.0)
                continue
            v = q[i] + lap(2.0 * c / eps)
            if v >= T + rho:
                flags.append(1); vals.append(v)  # BUG: releases the noisy value
                hits += 1
            else:
                flags.append(0); vals.append(0.0)
        out.append("[" + ", ".join(map(str, flags)) + ", " + ", ".join(map(repr, vals)) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
