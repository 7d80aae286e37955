#!/usr/bin/env python3
"""Exponential mechanism using the monotone-utility calibration on a non-monotone utility.

Implements: records in [0, 5) binned into 5 categories; utility u_i = count of category i
  (sensitivity 1); release i with probability proportional to exp(eps u_i / Delta), the
  calibration that is eps-DP only when utilities are monotone (all move in the same direction
  between neighbours), as with diffprivlib's mechanisms.Exponential(..., monotonic=True).
  Under replace-one one count goes down and another up, so the general exp(eps u / (2 Delta))
  is needed.
Source: McSherry & Talwar, "Mechanism Design via Differential Privacy" (FOCS 2007): the
  exponential mechanism needs eps/(2 Delta); the factor 2 may be dropped only for monotone
  utilities (Dwork & Roth 2014, Sec. 3.4; IBM diffprivlib's Exponential documents its
  `monotonic` flag this way).
Claim: pure:1, records in [0, 5], dimension 1, 50 records, replace-one.
True privacy loss: 2 eps = 2 (sup). Moving one record from category a to b multiplies b's
  weight by e^eps and a's by e^-eps, so P'(b)/P(b) = e^eps Z/Z' -> e^{2 eps} when a carries
  most of Z. With only a and b populated and count gap d = n_a - n_b, P(b) = 1/(1 + e^{eps d}):
  d = 4 gives P(b) = 0.018, P'(b) = 0.119, log-ratio 1.89.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--bins", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    counts = [0] * a.bins
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        counts[min(max(int(math.floor(x)), 0), a.bins - 1)] += 1
    top = max(counts)
    w = [math.exp(a.epsilon * (c - top)) for c in counts]  # BUG: eps/Delta, not eps/(2 Delta)
    cum, acc = [], 0.0
    for x in w:
        acc += x
        cum.append(acc)
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        t = rand() * acc
        i = 0
        while i < len(cum) - 1 and t >= cum[i]:
            i += 1
        out.append(str(i))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
