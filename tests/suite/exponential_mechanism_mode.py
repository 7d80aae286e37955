#!/usr/bin/env python3
"""Exponential mechanism choosing the most frequent category (correct).

Implements: records in [0, 5) are binned into 5 categories (floor, clamped); utility u_i =
  count of category i (sensitivity 1); release i with probability proportional to
  exp(eps u_i / 2). Sampling: weights exp(eps (u_i - max u)/2), one uniform draw.
Source: McSherry & Talwar, "Mechanism Design via Differential Privacy" (FOCS 2007);
  diffprivlib's mechanisms.Exponential and OpenDP's/Tumult's exponential mechanisms.
Claim: pure:1, records in [0, 5], dimension 1, 50 records, replace-one.
True privacy loss: at most eps = 1 (McSherry-Talwar: the numerator moves by at most e^{eps/2},
  the normaliser by at most e^{eps/2}); replace-one moves one count down and one up, which
  approaches eps when the category gaining the record is unlikely. Correct; integer output.
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
    w = [math.exp(a.epsilon * (c - top) / 2.0) for c in counts]
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
