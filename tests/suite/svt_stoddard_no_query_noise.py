#!/usr/bin/env python3
"""Sparse vector technique with no noise on the queries (Lyu-Su-Li Algorithm 5).

Implements: rho = Lap(2/eps) (eps1 = eps/2), nu_i = 0, no cutoff: every query answered 1 if
  q_i >= T + rho else 0.
Source: Lyu, Su, Li, PVLDB 2017, Algorithm 5 (from Stoddard, Chen, Machanavajjhala,
  "Differentially private algorithms for empirical machine learning", arXiv:1411.5428, 2014):
  claimed eps-DP, shown to be not eps'-DP for any finite eps'.
Claim: pure:1, records in [-1, 1]^5 (a user's scores for 5 items), dimension 5, 10 records,
  add-remove; queries: the 5 column sums (sensitivity 1 each), threshold T = 0, c = 1.
True privacy loss: infinite. Given rho, the answers are deterministic: the answer vector is
  1 exactly on the queries with q_i >= T + rho, so it is always "monotone in q": if q_1 < q_2
  no output has answer 1 on query 1 and 0 on query 2. Take D with q_1 = 0, q_2 = 0.5 and
  D' = D + (1, 0, 0, 0, 0) (q_1 = 1 > q_2): P_D'(1 on query 1, 0 on query 2) =
  P(0.5 < T + rho <= 1) = (e^{-1/4} - e^{-1/2}) / 2 ~ 0.086, P_D(same) = 0.
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
        out.append("[" + ", ".join("1" if qi >= t else "0" for qi in q) + "]")  # BUG: no nu_i, no cutoff
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
