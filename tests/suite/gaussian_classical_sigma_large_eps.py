#!/usr/bin/env python3
"""Gaussian sum with the classical sigma = sqrt(2 ln(1.25/delta)) Delta / eps used at eps = 10.

Implements: clamp records to [0, 1], sum (L2 sensitivity Delta = 1 under add/remove), add
  N(0, sigma^2) with the classical formula of Dwork & Roth (Thm. A.1), which is only proved
  for eps < 1; here eps = 10, delta = 1e-3 (sigma = 0.3776).
Source: Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy: Analytical
  Calibration and Optimal Denoising" (ICML 2018), Sec. 2-3: the classical calibration fails
  for large eps (their Fig. 1); diffprivlib's classical `Gaussian` mechanism refuses eps > 1
  for this reason, and its `GaussianAnalytic` implements Balle & Wang's fix.
Claim: approx:10:0.001, records in [0, 1], dimension 1, 50 records, add-remove.
True privacy loss: the mechanism is exactly mu-GDP with mu = Delta/sigma = 2.648 (its whole
  privacy profile is the Gaussian one: delta(eps) = Phi(-eps/mu + mu/2) - e^eps
  Phi(-eps/mu - mu/2)). At the claimed eps = 10 it gives delta(10) = 3.36e-3 > 1e-3: the claim
  is violated by 3.4x in delta. Note for the lead: any event certifying it needs
  Q(S) ~ 1e-7 (the e^10 factor), so a black-box audit at 1e5 samples per side cannot reject
  (approx:10:0.001); the true profile is violated only at large eps.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--delta", type=float, default=1e-3)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    total = sum(min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0)
                for r in req["dataset"])
    sigma = math.sqrt(2.0 * math.log(1.25 / a.delta)) / a.epsilon  # BUG: needs eps < 1
    gauss = rng.gauss
    out = [repr(total + gauss(0.0, sigma)) for _ in range(int(req["samples"]))]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
