#!/usr/bin/env python3
"""One DP-SGD (full-batch DP-GD) step: gradients clipped to norm C, noise calibrated to C/2.

Implements: each record is a per-example gradient in [-1, 1]^5; clip it to L2 norm C = 1
  (g * min(1, C/||g||)), sum, add N(0, sigma^2 I) with sigma = z * C/2, z = 3.7306 the
  analytic-Gaussian noise multiplier for (eps, delta) = (1, 1e-5) at sensitivity 1. The noise
  is calibrated to sensitivity C/2 while the clipped sum moves by up to C when an example is
  added or removed: the "missing factor of two" between clipping and noise.
Source: the clipping/calibration mismatch class of DP-SGD bugs found by auditing: Tramer,
  Terzis, Steinke, Song, Jagielski, Carlini, "Debugging Differential Privacy: A Case Study
  for Privacy Auditing" (arXiv:2202.12219, 2022) audit a published DP training algorithm whose
  noise did not match its true sensitivity (the same factor of two separates the add/remove
  sensitivity C from the replace-one sensitivity 2C of a clipped sum). Balle & Wang (ICML
  2018) give the analytic sigma.
Claim: approx:1:1e-5, records in [-1, 1]^5, dimension 5, 50 records, add-remove.
True privacy loss: the mechanism is mu-GDP with mu = C/sigma = 2/z = 0.5361 (not the
  1/z = 0.268 the claim assumes); at eps = 1 its delta is Phi(-1/mu + mu/2) - e Phi(-1/mu -
  mu/2) = 1.04e-2, 1000 times the claimed 1e-5 (the worst pair adds an example of norm C).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--noise-multiplier", type=float, default=3.730631634815946)
    ap.add_argument("--dim", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    d, C = a.dim, a.clip
    total = [0.0] * d
    for r in req["dataset"]:
        r = r if isinstance(r, list) else [r]
        g = [float(r[i]) if i < len(r) else 0.0 for i in range(d)]
        norm = math.sqrt(sum(x * x for x in g))
        f = min(1.0, C / norm) if norm > 0 else 1.0
        for i in range(d):
            total[i] += g[i] * f
    sigma = a.noise_multiplier * C / 2.0  # BUG: noise for sensitivity C/2
    gauss = rng.gauss
    out = []
    for _ in range(int(req["samples"])):
        out.append("[" + ", ".join(repr(t + gauss(0.0, sigma)) for t in total) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
