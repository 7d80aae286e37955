#!/usr/bin/env python3
"""Gaussian sum computed in float32 with a Box-Muller sampler (floating-point porosity).

Implements: records clamped to [0, 1], summed; noise sigma * Z with Z from Box-Muller on two
  24-bit uniforms, Z and sigma*Z rounded to float32, and the release fl32(sum + fl32(sigma Z)),
  as a deep-learning framework computes with float32 tensors. sigma = 3.7306 is the analytic
  Gaussian sigma for (1, 1e-5) at sensitivity 1 (Balle & Wang 2018), so the real-number
  mechanism meets the claim with equality.
Source: Jin, McMurtry, Rubinstein, Ohrimenko, "Are We There Yet? Timing and Floating-Point
  Attacks on Differential Privacy Systems" (IEEE S&P 2022, arXiv:2112.05307): Gaussian
  samplers (Box-Muller, polar, ziggurat) of DP libraries produce porous floating-point
  outputs that reveal the unnoised value, extending Mironov (CCS 2012) from Laplace to
  Gaussian noise. This program is the float32 form of that bug.
Claim: approx:1:1e-5, records in [0, 1], dimension 1, 10 records, add-remove.
True privacy loss: delta(1) >= ~0.03. Example: sums 5 and 6 (D = ten records 0.5, D' = D + {1}).
  An output y in [1, 2) has float32 spacing 2^-23. From sum 5 it is 5 + e with e in [-4, -3),
  where float32 spacing is 2^-22, so y is a multiple of 2^-22; from sum 6 it is 6 + e' with
  e' in [-5, -4), spacing 2^-21, so y is a multiple of 2^-21. The event "y in [1, 2) and
  y * 2^21 is not an integer" has probability ~P(sigma Z in [-4, -3)) / 2 ~ 0.035 under D and
  0 under D' (measured: 0.0348 and 0 in 1e5 draws), so no delta < 0.03 holds at any eps (true eps = infinity at delta = 1e-5). In
  the real-number model the loss is exactly the claim.
"""
import argparse, json, math, random, struct, sys

_f32 = struct.Struct("f")


def f32(x):
    return _f32.unpack(_f32.pack(x))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sigma", type=float, default=3.730631634815946)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    total = f32(0.0)
    for r in req["dataset"]:
        total = f32(total + f32(min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0)))
    sigma = f32(a.sigma)
    bits = rng.getrandbits
    out = []
    for _ in range(int(req["samples"])):
        u1 = (bits(24) + 1) / 16777216.0  # float32 uniform in (0, 1]
        u2 = bits(24) / 16777216.0
        z = f32(math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))
        out.append(repr(f32(total + f32(sigma * z))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
