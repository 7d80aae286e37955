#!/usr/bin/env python3
"""Report noisy max with exponential noise, returning the index (correct).

Implements: score_i = column sum i of the records (coordinates clamped to [0, 1]), release
  argmax_i (score_i + Exp(scale 2/eps)). Ties (probability 0) go to the lowest index.
Source: StatDP's correct variant noisy_max_v2a (https://github.com/cmla-psu/statdp,
  statdp/algorithms.py); Ding, Kifer, et al., "The Permute-and-Flip Mechanism is Identical
  to Report-Noisy-Max with Exponential Noise" (arXiv:2105.07260, 2021) and McKenna & Sheldon,
  "Permute-and-Flip" (NeurIPS 2020) prove it eps-DP for scores of sensitivity 1.
Claim: pure:1, records in [0, 1]^5, dimension 5, 10 records, add-remove.
True privacy loss: at most eps = 1 (permute-and-flip with eps/(2 Delta), Delta = 1). Correct.
  The output is an index in {0..4}, so no floating-point porosity reaches it.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--candidates", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    k = a.candidates
    q = [0.0] * k
    for r in req["dataset"]:
        r = r if isinstance(r, list) else [r]
        for i in range(k):
            q[i] += min(max(float(r[i] if i < len(r) else 0.0), 0.0), 1.0)
    b = 2.0 / a.epsilon
    expo = rng.expovariate
    out = []
    for _ in range(int(req["samples"])):
        best, arg = -math.inf, 0
        for i, qi in enumerate(q):
            v = qi + expo(1.0 / b)
            if v > best:
                best, arg = v, i
        out.append(str(arg))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
