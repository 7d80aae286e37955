#!/usr/bin/env python3
"""Sparse vector technique, Lyu-Su-Li Algorithm 1 (correct).

Implements: rho = Lap(2/eps) (eps1 = eps/2, Delta = 1), nu_i = Lap(4c/eps) (eps2 = eps/2,
  2c*Delta/eps2); answer 1 (above) if q_i + nu_i >= T + rho, else 0; stop after c answers 1;
  unanswered queries are printed as -1 (a fixed function of the transcript).
Source: Min Lyu, Dong Su, Ninghui Li, "Understanding the Sparse Vector Technique for
  Differential Privacy", PVLDB 10(6), 2017, Algorithm 1 (proved eps-DP, Theorem 2).
Claim: pure:1, records in [-1, 1]^5 (a user's scores for 5 items), dimension 5, 10 records,
  add-remove; queries: the 5 column sums (sensitivity 1 each), threshold T = 0, c = 1.
True privacy loss: at most eps = 1 (Lyu et al. Thm. 2; for monotone queries even the smaller
  noise Lap(2c/eps) would do). Correct: an audit must not flag it.
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
        ans, hits = [], 0
        for i in range(k):
            if hits >= c:
                ans.append(-1)
            elif q[i] + lap(4.0 * c / eps) >= T + rho:
                ans.append(1)
                hits += 1
            else:
                ans.append(0)
        out.append("[" + ", ".join(map(str, ans)) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
