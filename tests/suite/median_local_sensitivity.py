#!/usr/bin/env python3
"""Median with Laplace noise scaled to the LOCAL sensitivity, floored at a tiny minimum scale.

Implements: m(D) = lower median of the records clamped to [0, 100]; LS(D) = the largest change
  of m when one record is added or removed; release m(D) + Lap(max(LS(D), 1e-9) / eps). The
  floor 1e-9 stands in for "avoid a zero scale", which many implementations add so that the
  Laplace sampler does not fail: it makes an almost-atom at m(D).
Source: Nissim, Raskhodnikova, Smith, "Smooth Sensitivity and Sampling in Private Data
  Analysis" (STOC 2007), Sec. 1.2/3: noise proportional to local sensitivity is not DP, with
  the median as their example (the fix is smooth sensitivity).
Claim: pure:1, records in [0, 100], dimension 1, 50 records, add-remove.
True privacy loss: infinite. With m = sorted[(n-1)//2], D = {0 x 24, 100 x 26} has m = 100
  and so has every neighbour (remove a 100: {0 x 24, 100 x 25}, m = 100; add a 0:
  {0 x 25, 100 x 26}, m = 100; ...), so LS(D) = 0 and the output lies within 1e-8 of 100
  with probability 1 - e^-10. Its neighbour D' = D + {0} = {0 x 25, 100 x 26} still has
  m = 100, but removing a 100 from it gives {0 x 25, 100 x 25} with m = 0, so LS(D') = 100 and
  P_D'(|y - 100| < 1e-8) ~ 1e-10: a likelihood ratio ~1e10 on an event of probability ~1,
  eps_true = infinity (delta ~ 1 at eps = 1).
"""
import argparse, json, math, random, sys


def lower_median(s):
    return s[(len(s) - 1) // 2] if s else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=0.0)
    ap.add_argument("--upper", type=float, default=100.0)
    ap.add_argument("--min-scale", type=float, default=1e-9)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    s = sorted(min(max(float(r[0] if isinstance(r, list) else r), a.lower), a.upper)
               for r in req["dataset"])
    m = lower_median(s)
    # Local sensitivity under add/remove: adding the lowest or highest possible value, or
    # removing the first, the median or the last record covers every possible new median.
    cands = [sorted(s + [a.lower]), sorted(s + [a.upper])]
    for i in {0, (len(s) - 1) // 2, len(s) - 1}:
        if 0 <= i < len(s):
            cands.append(s[:i] + s[i + 1:])
    ls = max(abs(lower_median(c) - m) for c in cands)
    scale = max(ls / a.epsilon, a.min_scale)  # BUG: local, not global/smooth, sensitivity
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        u = rand() - 0.5
        out.append(repr(m - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
