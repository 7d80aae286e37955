#!/usr/bin/env python3
"""Textbook Laplace count drawn by inverse CDF from a uniform double (Mironov 2012).

Implements: |D| + Lap(1/eps), the noise drawn as -b * sign(u) * ln(1 - 2|u|) with
  u = random() - 1/2 on the 2^-53 grid, and the sum done in double precision: the textbook
  sampler of many DP libraries before 2012-2020 (and of examples/exec/stdlib_laplace_count.py).
Source: Ilya Mironov, "On Significance of the Least Significant Bits for Differential
  Privacy", ACM CCS 2012: the set of doubles reachable as f(D) + noise differs between
  f(D) = c and f(D) = c + 1 (the output is "porous"), so an observer who sees the low
  mantissa bits tells the two apart; he proposed the snapping mechanism as the fix (see
  laplace_sum_snapping.py).
Claim: pure:1, records in [0, 1], dimension 1, 10 records, add-remove.
True privacy loss: infinite in the floating-point model. The noise takes at most 2^54 values
  (one per u), and c + noise rounds to a double, so the outputs reachable from c = 10 and from
  c = 11 differ. Measured with an exact membership test (invert the sampler: is y - 11 the
  noise of some u on the 2^-53 grid, rounded as the program rounds?) on 20 000 outputs of
  c = 10: 7.6 % of the outputs with |noise| <= 3 and 67 % of those with |noise| > 3 cannot be
  produced by c = 11: an event of probability ~0.1 under D and 0 under D' (delta >= 0.1 at
  every eps). The count is an integer, so c + noise has no low bits of c to show: bit
  features (float-bits) do not see it; only a sampler-aware test does. In the real-number
  model the loss is exactly eps = 1.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    count = float(len(req["dataset"]))
    scale = 1.0 / a.epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(count - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
