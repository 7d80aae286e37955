#!/usr/bin/env python3
"""Cross-check `audit accountant` against Google's dp_accounting PLD accountant on parameters
the tests do not pin (both neighbouring relations).

    pip install dp-accounting
    cargo build --release
    python3 examples/accountant/compare_dp_accounting.py

For each (q, z, T, delta) it prints dp_accounting's epsilon (PLDAccountant, discretization
1e-4, its default), ours (the pessimistic PLD's upper bound) and the relative difference.
It exits 1 if ours is ever below the reference or more than 0.1 % above it.
"""
import json
import subprocess
import sys
from pathlib import Path

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

AUDIT = Path(__file__).resolve().parents[2] / "target" / "release" / "audit"
CASES = [
    (0.01, 1.1, 6000, 1e-5),
    (0.001, 0.8, 10000, 1e-6),
    (0.05, 2.0, 500, 1e-5),
    (0.1, 0.9, 100, 1e-3),
    (0.2, 1.5, 50, 1e-5),
    (0.004, 0.6, 3000, 1e-5),
    (1.0, 5.0, 20, 1e-5),
    (0.5, 1.0, 10, 1e-4),
    (0.02, 3.0, 2000, 1e-7),
    (0.3, 0.7, 30, 1e-2),
]
RELATIONS = {
    "add-remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace-one": dp_accounting.NeighboringRelation.REPLACE_ONE,
}


def main():
    bad = 0
    for name, relation in RELATIONS.items():
        for q, z, steps, delta in CASES:
            acc = pld_privacy_accountant.PLDAccountant(
                neighboring_relation=relation, value_discretization_interval=1e-4
            )
            acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
            ref = acc.get_epsilon(delta)
            out = subprocess.run(
                [str(AUDIT), "accountant", "--sampling-rate", str(q), "--noise-multiplier",
                 str(z), "--steps", str(steps), "--delta", str(delta), "--neighbors", name,
                 "--json"],
                capture_output=True, text=True, check=True,
            ).stdout
            ours = json.loads(out)["pld"]["epsilon_upper"]
            rel = (ours - ref) / ref
            ok = 0.0 <= rel <= 1e-3
            bad += not ok
            print(f"{name:11} q={q:<6} z={z:<4} T={steps:<6} delta={delta:<6g} "
                  f"dp_accounting {ref:.9f}  ours {ours:.9f}  relative {rel:+.2e}"
                  f"{'' if ok else '  OUT OF RANGE'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
