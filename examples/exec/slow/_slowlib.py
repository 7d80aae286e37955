"""Shared by the slow-program suite (examples/exec/slow/): a DP-library pipeline's costs and the
exec protocol, standard library only.

Every program of the suite starts by spending `--startup` seconds of CPU time (a busy loop on
`time.process_time`, the way importing numpy or a DP library spends its start-up: a fixed
amount of work, so on a busy machine it takes longer on the wall clock), then reads the request
({"dataset": [...], "samples": n, "seed": s}, docs/exec-protocol.md) and prints n releases, one
per line, spending `--cost-ms` milliseconds of CPU time on each (the library's per-release work).
All randomness comes from `random.Random(seed)`. Releases are rounded to a grid of 2^-8 (as
examples/exec/clamped_mean_min_rows.py does), so that the floating-point artefacts of
`-b * log(1 - 2|u|)` are not what an audit finds: the audits measure the bug each program
carries, nothing else.
"""
import argparse
import json
import math
import random
import sys
import time

GRID = 2.0 ** -8


def burn_cpu(seconds):
    """Busy-loops until this process has used `seconds` more CPU time."""
    if seconds <= 0:
        return
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def arguments(doc, startup, cost_ms, extra=None):
    """The flags every program takes: --startup S, --cost-ms M, --fixed (the correct twin),
    --epsilon, --lower, --upper; `extra(ap)` adds a program's own."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--startup", type=float, default=startup,
                    help="CPU seconds spent before reading the request (default %(default)s)")
    ap.add_argument("--cost-ms", type=float, default=cost_ms,
                    help="CPU milliseconds spent per release (default %(default)s)")
    ap.add_argument("--fixed", action="store_true", help="run the correct twin")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=0.0)
    ap.add_argument("--upper", type=float, default=10.0)
    if extra is not None:
        extra(ap)
    a = ap.parse_args()
    burn_cpu(a.startup)
    return a


def request():
    """(records as floats, releases asked for, the seeded generator)."""
    req = json.load(sys.stdin)
    rows = [float(r[0] if isinstance(r, list) else r) for r in req["dataset"]]
    return rows, int(req["samples"]), random.Random(req["seed"])


def clamp(x, lo, hi):
    return min(max(x, lo), hi)


def laplace(rng, scale):
    """One draw of Laplace(0, scale) by inversion."""
    u = rng.random() - 0.5
    return -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))


def on_grid(x):
    return round(x / GRID) * GRID


def releases(n, cost_ms, one):
    """Prints n releases, one() each, spending cost_ms of CPU on each."""
    cost = cost_ms * 1e-3
    out = []
    for _ in range(n):
        burn_cpu(cost)
        v = one()
        if isinstance(v, list):
            out.append("[" + ",".join(repr(on_grid(x)) for x in v) + "]")
        else:
            out.append(repr(on_grid(v)))
    sys.stdout.write("\n".join(out) + "\n")
