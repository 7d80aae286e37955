#!/usr/bin/env python3
"""Laplace mean restricted to the data domain by re-sampling, with the unbounded scale.

Implements: mean of the records clamped to [0, 1] (dataset size n public, replace-one,
  sensitivity 1/n); draw mean + Lap(1/(n eps)) again and again until it lands in [0, 1]
  (the "bounded Laplace mechanism") and release it.
Source: Holohan, Antonatos, Braghin, Mac Aonghusa, "The Bounded Laplace Mechanism in
  Differential Privacy", Journal of Privacy and Confidentiality 10(1), 2020 (arXiv:1808.10410):
  with the unbounded scale Delta/eps this mechanism is not eps-DP (the normalising constant
  depends on the data); they derive the larger scale needed, implemented as
  LaplaceBoundedDomain in IBM's diffprivlib.
Claim: pure:1, records in [0, 1], dimension 1, 10 records, replace-one.
True privacy loss: with b = 1/(n eps) = 0.1 and Z(m) = P(m + Lap(b) in [0, 1]) =
  1 - e^{-m/b}/2 - e^{-(1-m)/b}/2, the output density is e^{-|y - m|/b} / (2 b Z(m)). For
  m = 0 (all records 0) and m' = 0.1 (one record replaced by 1), at y = 0 the ratio is
  e^{0.1/b} Z(0.1)/Z(0) = e^1 * 0.81600/0.49998, so eps_true = 1 + ln 1.6321 = 1.490 (the
  maximum over pairs and outputs: the Z ratio is largest at the domain's edge).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0) for r in req["dataset"]]
    n = max(len(xs), 1)
    mean = sum(xs) / n
    b = 1.0 / (n * a.epsilon)  # BUG: the unbounded Laplace scale, with re-sampling below
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        while True:
            u = rand() - 0.5
            y = mean - b * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))
            if 0.0 <= y <= 1.0:
                break
        out.append(repr(y))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
