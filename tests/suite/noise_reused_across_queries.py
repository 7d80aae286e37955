#!/usr/bin/env python3
"""A noisy sum and a noisy count that share one noise draw (noise reused across queries).

Implements: records clamped to [0, 1]; release (sum + Z, count + Z), each rounded to a multiple
  of 2^-10 (removes floating-point porosity, so the case is about the reuse alone), with ONE
  Z ~ Laplace(2/eps) for both queries: each query has sensitivity 1 under add/remove and gets
  eps/2 (the budget split is right), but the noise is drawn once and added to both, as happens
  when a generator is re-seeded before every query or one noise vector is cached and reused.
Source: basic composition (Dwork & Roth 2014, Theorem 3.14) needs independent randomness per
  query; correlated or reused noise is a recurring finding of DP code reviews (the same family
  as the constant-seed and shared-randomness mistakes discussed by Tramèr et al., "Debugging
  Differential Privacy: A Case Study for Privacy Auditing", 2022).
Claim: pure:1, records in [0, 1], dimension 1, 20 records, add-remove.
True privacy loss: infinite: count − sum = Σ (1 − x_i) is released without noise (up to the
  2^-10 rounding); adding a record x ≤ 1 − 2^-9 changes it, so the two outputs have disjoint
  supports along that direction.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0) for r in req["dataset"]]
    s, c = sum(xs), float(len(xs))
    b = 2.0 / a.epsilon
    grid = 2.0 ** -10
    out = []
    for _ in range(int(req["samples"])):
        u = rng.random() - 0.5
        z = -b * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
        ns = round((s + z) / grid) * grid
        nc = round((c + z) / grid) * grid  # BUG: the same z for both queries
        out.append("[%r, %r]" % (ns, nc))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
