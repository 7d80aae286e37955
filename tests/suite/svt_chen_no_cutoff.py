#!/usr/bin/env python3
"""Sparse vector technique that never stops (Lyu-Su-Li Algorithm 6).

Implements: rho = Lap(2/eps) (eps1 = eps/2), nu_i = Lap(2/eps) (eps2 = eps/2, Delta/eps2);
  every query answered (no cutoff c): 1 if q_i + nu_i >= T + rho, else 0.
Source: Lyu, Su, Li, PVLDB 2017, Algorithm 6 (from Chen, Xu, Zhou, "Differentially private
  high-dimensional data publication via sampling-based inference", KDD 2015): claimed eps-DP,
  not eps'-DP for any finite eps' as the number of queries grows.
Claim: pure:1, records in [-1, 1]^5 (a user's scores for 5 items), dimension 5, 10 records,
  add-remove; queries: the 5 column sums (sensitivity 1 each), threshold T = 0, c = 1.
True privacy loss: for k = 5 queries, at most k*eps/2 = 2.5 (given rho the answers are
  independent; each answer's probability changes by at most e^{1/2} when its query moves by
  1), strictly more than eps = 1, and unbounded as k grows (Lyu et al.). With
  D' = D + (1, 1, -1, -1, -1) and an output 0 on the raised queries, 1 on the lowered ones,
  the conditional ratio is e^{5/2} for every rho with q_lowered <= T + rho <= q_raised; the
  sup 2.5 is approached when that rho-interval carries the mass of rho, at the price of
  rarer outputs. Numerically (integrating over rho): with every q_i = T, the output
  (0, 0, 1, 1, 1) has probability 1.7 % under D and log-ratio 2.06 against D'; with
  q_raised = T + 1, q_lowered = T - 1, log-ratio 2.22 at probability 0.2 %.
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
        t = T + rho
        out.append("[" + ", ".join("1" if qi + lap(2.0 / eps) >= t else "0" for qi in q) + "]")  # BUG: no cutoff
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
