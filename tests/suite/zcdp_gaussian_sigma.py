#!/usr/bin/env python3
"""A Gaussian sum calibrated for rho-zCDP; by default with sigma = Delta/(2 rho) instead of
Delta/sqrt(2 rho).

Implements: records clamped to [0, 1] (L2 sensitivity Delta = 1 under add/remove); release
  sum + N(0, sigma^2), rounded to a multiple of 2^-10 (removes floating-point porosity). The
  Gaussian mechanism is Delta^2/(2 sigma^2)-zCDP, so rho-zCDP needs sigma = Delta/sqrt(2 rho)
  (`--correct 1`); the buggy default solves rho = Delta/(2 sigma) instead, sigma = Delta/(2 rho),
  which under-noises whenever rho > 1/2.
Source: Bun & Steinke, TCC 2016, Proposition 1.6 (the Gaussian mechanism's zCDP); the
  calibration mistake is the square root dropped from it.
Claim: zcdp:2, records in [0, 1], dimension 1, 20 records, add-remove.
True privacy loss: default: sigma = 1/4, exactly 8-zCDP (Rényi divergence 8·alpha against the
  claimed 2·alpha at every order; the pair is a Gaussian shift of mu = 1/sigma = 4); `--correct 1`:
  sigma = 1/2, exactly 2-zCDP (the rounding can only lower it).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rho", type=float, default=2.0)
    ap.add_argument("--correct", type=int, default=0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0) for r in req["dataset"]]
    s = sum(xs)
    sigma = 1.0 / math.sqrt(2.0 * a.rho) if a.correct else 1.0 / (2.0 * a.rho)  # BUG by default
    grid = 2.0 ** -10
    out = [repr(round((s + rng.gauss(0.0, sigma)) / grid) * grid) for _ in range(int(req["samples"]))]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
