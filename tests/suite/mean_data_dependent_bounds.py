#!/usr/bin/env python3
"""Laplace mean whose clamping bounds are computed from the private data.

Implements diffprivlib's tools.mean when the caller gives no `bounds`: diffprivlib then takes
  lower = min(data), upper = max(data) (and emits a PrivacyLeakWarning: "Bounds have not been
  specified and will be calculated on the data provided. This will result in additional
  privacy leakage."), and releases the mean with its truncated Laplace mechanism
  (LaplaceTruncated, output clamped to [lower, upper]) at sensitivity (upper - lower) / n.
Source: IBM diffprivlib (github.com/IBM/differential-privacy-library), tools.mean /
  PrivacyLeakWarning; data-dependent sensitivity is the textbook counter-example of Nissim,
  Raskhodnikova, Smith, "Smooth sensitivity and sampling in private data analysis" (STOC 2007).
Claim: pure:1, records in [0, 100] (e.g. ages), dimension 1, 50 records, add-remove.
True privacy loss: infinite. If D holds 50 equal values a, lower = upper = a, the sensitivity
  is 0 and the output is exactly a with probability 1. D' = D + {b}, b > a, has bounds [a, b],
  sensitivity (b - a)/51 > 0 and mean a + (b - a)/51; LaplaceTruncated puts only the mass
  P(Lap < -(b - a)/51) = e^-eps / 2 = 0.184 on the bound a. So the event {output != a} has
  probability 0 under D and 1 - e^-eps/2 = 0.816 under D': no finite eps (delta >= 0.816 at
  every eps), and in the other direction {output = a} has ratio 2 e^eps (measured:
  1.0 vs 0.185 for a = 30, b = 31). On spread-out data the noise scale still follows the
  data's range, so the loss is unbounded in the tails.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [float(r[0] if isinstance(r, list) else r) for r in req["dataset"]]
    samples = int(req["samples"])
    if not xs:
        sys.stdout.write("0.0\n" * samples)
        return
    lower, upper = min(xs), max(xs)  # BUG: bounds from the private data
    n = len(xs)
    mean = sum(min(max(x, lower), upper) for x in xs) / n
    scale = (upper - lower) / n / a.epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(samples):
        if scale == 0.0:
            y = mean  # zero sensitivity: the mechanism adds no noise
        else:
            u = rand() - 0.5
            y = mean - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))
        out.append(repr(min(max(y, lower), upper)))  # LaplaceTruncated clamps to the bounds
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
