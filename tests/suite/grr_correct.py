#!/usr/bin/env python3
"""k-ary (generalized) randomized response, correct, meeting its claim with equality.

Implements (local DP): each record in [0, 4) is a category v = floor(x) in {0, 1, 2, 3};
  report v with probability p = e^eps/(e^eps + k - 1), else a uniform draw from the k - 1
  other categories. Output: the vector of the n reports.
Source: Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency
  Estimation" (USENIX Security 2017), direct encoding / GRR; also Kairouz, Oh, Viswanath,
  "Extremal Mechanisms for Local Differential Privacy" (NeurIPS 2014).
Claim: pure:1, records in [0, 4], dimension 1, 10 records, replace-one.
True privacy loss: exactly eps = 1: changing one person's value from v to u changes that
  report's law from (p on v, q elsewhere) to (p on u, q elsewhere), p/q = e^eps (equality on
  the events "report = v" and "report = u"); the other reports are unchanged.
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
        rep = []
        for v in vals:
            if rand() < p:
                rep.append(v)
            else:
                u = randrange(k - 1)
                rep.append(u if u < v else u + 1)  # uniform over the other k - 1 values
        out.append("[" + ", ".join(map(str, rep)) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
