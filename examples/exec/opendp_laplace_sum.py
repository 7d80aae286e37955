#!/usr/bin/env python3
"""dp-audit exec adapter for OpenDP: a clamped float sum with Laplace noise.

The measurement is built with OpenDP's own combinators,

    (vector_domain(atom_domain(T=float, nan=False)), symmetric_distance())
        >> then_clamp((LO, HI)) >> then_sum() >> then_laplace(scale=SCALE)

and every release is one call of it on the request's dataset. Neighbors are OpenDP's symmetric
distance 1: one record added or removed (dp-audit's default, add-remove). OpenDP computes the
measurement's epsilon itself; ask it and use the answer as the claim:

    python3 examples/exec/opendp_laplace_sum.py --bounds 0:1 --scale 1 --print-epsilon
    audit run --exec 'python3 examples/exec/opendp_laplace_sum.py --bounds 0:1 --scale 1' \
        --claim pure:1.0000001 --record-range 0:1

(--print-epsilon prints privacy_map(1) rounded up to 8 significant digits, so it never claims
less than OpenDP proves.)

Install: pip install opendp (tested with 0.16).

Seeding: OpenDP draws its noise from the operating system's cryptographic generator and offers
no way to seed it, so THE REQUEST'S SEED IS IGNORED: an audit of this adapter is not
reproducible bit for bit (two runs with the same --seed see different samples). The audit stays
valid: dp-audit's bounds only need the releases to be independent, which fresh OS randomness
gives, and every false-violation probability it states still holds.

Protocol: one JSON request on stdin, {"dataset": [...], "samples": N, "seed": S}; N lines on
stdout, one number each.
"""
import argparse
import decimal
import json
import sys


def parse_bounds(text):
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = float(lo), float(hi)
    except ValueError:
        lo = hi = float("nan")
    if not sep or not (lo < hi):
        sys.exit(f"--bounds {text!r}: expected LO:HI with LO < HI, e.g. 0:1")
    return lo, hi


def round_up(x, digits=8):
    """x rounded up to `digits` significant digits, as text (a claim never below OpenDP's)."""
    return str(decimal.Context(prec=digits, rounding=decimal.ROUND_CEILING).create_decimal(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bounds", default="0:1", help="clamping bounds LO:HI (default 0:1)")
    ap.add_argument("--scale", type=float, required=True, help="Laplace noise scale")
    ap.add_argument("--print-epsilon", action="store_true",
                    help="print OpenDP's epsilon for one added/removed record and exit")
    args = ap.parse_args()
    lo, hi = parse_bounds(args.bounds)

    try:
        import opendp.prelude as dp
    except ImportError as e:
        sys.exit(f"cannot import opendp ({e}); install: pip install opendp")
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    meas = space >> dp.t.then_clamp((lo, hi)) >> dp.t.then_sum() >> dp.m.then_laplace(scale=args.scale)

    if args.print_epsilon:
        print(round_up(meas.map(1)))
        return

    req = json.load(sys.stdin)
    data = [float(x) for x in req["dataset"]]
    # req["seed"] is ignored: OpenDP cannot be seeded (see the module docstring).
    out = [repr(float(meas(data))) for _ in range(req["samples"])]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
