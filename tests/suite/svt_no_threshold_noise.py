#!/usr/bin/env python3
"""Sparse vector technique with no noise on the threshold (all of eps spent on the queries).

Implements: rho = 0 (exact threshold), nu_i = Lap(2c/eps); answer 1 if q_i + nu_i >= T, else
  0; stop after c answers 1; unanswered queries printed as -1.
Source: Lyu, Su, Li, "Understanding the Sparse Vector Technique for Differential Privacy",
  PVLDB 2017, Sec. 3-4: the noisy threshold rho is what makes the cost of the (unbounded
  number of) negative answers independent of their number; dropping it ("the threshold is
  public, so it needs no noise") makes every negative answer cost eps/(2c).
Claim: pure:1, records in [-1, 1]^5 (a user's scores for 5 items), dimension 5, 10 records,
  add-remove; queries: the 5 column sums (sensitivity 1 each), threshold T = 0, c = 1.
True privacy loss: k*eps/(2c) = 2.5 for k = 5. With T fixed, the answers are independent
  given the data: P(0 on i) = F(T - q_i), P(1 on i) = 1 - F(T - q_i) with F the Lap(2) CDF.
  Take D with q_1..q_4 >= T and q_5 <= T, and D' = D + (1, 1, 1, 1, -1): each factor
  F(T - q_i) / F(T - q_i - 1) = e^{1/2} (left branch of F) and (1 - F(T - q_5)) /
  (1 - F(T - q_5 + 1)) = e^{1/2} (right branch), so the output (0, 0, 0, 0, 1) has ratio
  exactly e^{5/2}; with q_i = T its probability under D is 2^-5 ~ 3 %.
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
        ans, hits = [], 0
        for i in range(k):
            if hits >= c:
                ans.append(-1)
            elif q[i] + lap(2.0 * c / eps) >= T:  # BUG: no noise on the threshold
                ans.append(1)
                hits += 1
            else:
                ans.append(0)
        out.append("[" + ", ".join(map(str, ans)) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
