#!/usr/bin/env python3
"""Discrete Gaussian on a count, zCDP claim (correct, equality up to the discretisation).

Implements: |D| + N_Z(0, sigma^2), sigma = 2, sampled exactly as Canonne-Kamath-Steinke's
  Algorithm 3: t = floor(sigma) + 1, Y ~ discrete Laplace(t) (sign x geometric, -0
  rejected), accept with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).
Source: Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS
  2020), Algorithms 2-3 and Theorem 4; used by the US Census Bureau's 2020 TopDown algorithm,
  OpenDP and Tumult Analytics.
Claim: zcdp:0.125 (rho = Delta^2/(2 sigma^2) = 1/8), records in [0, 1], dimension 1,
  20 records, add-remove.
True privacy loss: rho = 1/8 zCDP (CKS Theorem 4: D_alpha(N_Z(mu, s^2) || N_Z(nu, s^2)) <=
  alpha (mu - nu)^2 / (2 s^2) for integer mu, nu, essentially with equality at sigma = 2), so
  the claim holds and is nearly tight. Integer output.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sigma", type=float, default=2.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    n = len(req["dataset"])
    s2 = a.sigma * a.sigma
    t = math.floor(a.sigma) + 1
    alpha = math.exp(-1.0 / t)
    rand, exp = rng.random, math.exp
    out = []
    for _ in range(int(req["samples"])):
        while True:
            while True:  # discrete Laplace(t)
                m = 0
                while rand() < alpha:
                    m += 1
                neg = rand() < 0.5
                if not (neg and m == 0):
                    break
            if rand() < exp(-((m - s2 / t) ** 2) / (2.0 * s2)):
                y = -m if neg else m
                break
        out.append(str(n + y))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
