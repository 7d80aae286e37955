#!/usr/bin/env python3
"""Clamped Laplace sum released through Mironov's snapping mechanism (correct).

Implements: clamp records to [-5, 5], sum (sensitivity Delta = 5 under add/remove); on the
  unit-sensitivity query g = sum/Delta, clamped to [-B, B] with B = 64, release
  clamp_B(round_Lambda(g + S * lambda * ln(U*))) with lambda = 1/eps, Lambda = the smallest
  power of two >= lambda, S a uniform sign and U* uniform on (0, 1] drawn with full
  floating-point resolution (geometric exponent, 52 random mantissa bits); the release is
  Delta times that value (a fixed post-processing).
Source: Ilya Mironov, "On Significance of the Least Significant Bits for Differential
  Privacy" (ACM CCS 2012), Sec. 5, the snapping mechanism, his fix for the textbook sampler
  (see laplace_count_float_inverse_cdf.py).
Claim: pure:1.000000001, records in [-5, 5], dimension 1, 10 records, add-remove.
True privacy loss: Mironov's Theorem 1 gives (1/lambda)(1 + 2^-49 B) = eps (1 + 1.1e-13) for
  lambda < B < 2^46 lambda, within the claim; in the real-number model the snapped Laplace is
  a post-processing of the eps-DP Laplace mechanism. Outputs lie on the grid Delta * Lambda Z,
  so the low bits carry nothing. Nearly tight: adding a record 5 shifts g by exactly 1 =
  Lambda, and far-tail grid points then have ratio e^eps.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=-5.0)
    ap.add_argument("--upper", type=float, default=5.0)
    ap.add_argument("--bound", type=float, default=64.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    delta = max(abs(a.lower), abs(a.upper))
    total = sum(min(max(float(r[0] if isinstance(r, list) else r), a.lower), a.upper)
                for r in req["dataset"])
    B = a.bound
    g = min(max(total / delta, -B), B)
    lam = 1.0 / a.epsilon
    Lam = 2.0 ** math.ceil(math.log2(lam))
    bits, log = rng.getrandbits, math.log
    out = []
    for _ in range(int(req["samples"])):
        e = 1
        while e < 1000 and bits(1) == 0:  # P(e > 1000) = 2^-1000
            e += 1
        u = (4503599627370496 + bits(52)) * 2.0 ** (-52 - e)  # in [2^-e, 2^(1-e)), all doubles
        s = 1.0 if bits(1) else -1.0
        y = g + s * lam * log(u)
        y = Lam * round(y / Lam)
        y = min(max(y, -B), B)
        out.append(repr(delta * y))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
