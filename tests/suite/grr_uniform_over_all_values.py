#!/usr/bin/env python3
"""k-ary randomized response that re-draws from ALL k values when it does not keep the truth.

Implements (local DP, one report per record): each record in [0, 4) is a category
  v = floor(x) in {0, 1, 2, 3}; with probability p = e^eps / (e^eps + k - 1) report v, else
  report a uniform draw from all k categories (the bug: GRR draws from the k - 1 OTHER
  categories). Output: the vector of the n reports.
Source: the generalized randomized response ("direct encoding") of Wang, Blocki, Li, Jha,
  "Locally Differentially Private Protocols for Frequency Estimation" (USENIX Security 2017):
  P(report v) = p = e^eps/(e^eps + k - 1), P(report u != v) = q = 1/(e^eps + k - 1). This
  program mixes its p with the equivalent "keep, else re-draw uniformly from all k"
  construction, whose keep-probability must be (e^eps - 1)/(e^eps + k - 1), not p.
Claim: pure:1, records in [0, 4], dimension 1, 10 records, replace-one (LDP: one person's
  value changes).
True privacy loss: P(report v | v) = p + (1 - p)/k, P(report u | v) = (1 - p)/k, ratio
  1 + p k /(1 - p) = 1 + k e^eps/(k - 1) = 4.624 for k = 4: eps_true = ln 4.624 = 1.531.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--k", type=int, default=4)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    k = a.k
    vals = [min(max(int(math.floor(float(r[0] if isinstance(r, list) else r))), 0), k - 1)
            for r in req["dataset"]]
    p = math.exp(a.epsilon) / (math.exp(a.epsilon) + k - 1)
    rand, randrange = rng.random, rng.randrange
    out = []
    for _ in range(int(req["samples"])):
        rep = [v if rand() < p else randrange(k) for v in vals]  # BUG: randrange over all k
        out.append("[" + ", ".join(map(str, rep)) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
