"""In-process pacing of ``dp_audit.audit_run`` at its default flags (docs/python.md, "Pacing in
process"): how the planner's budget (60 s by default for a callable, as for an exec program)
is spent on three callables of different speeds, each a Laplace mean that keeps pure:1.

    python docs/design/python-pacing/pacing.py [CASE ...] [--cap SECONDS]

CASE: fast (numpy, microseconds per call), overhead (0.1 s per call), per-release (about 1 ms
per release). Each case runs in a child process of its own, killed after ``--cap`` seconds
(default 300), and prints one line of JSON: budget, trials planned and run, why the search
stopped, the confirmations, the verdict (or the exception) and the wall time. Re-run it after
the engine's planner changes: the numbers are the planner's.
"""

import json
import subprocess
import sys
import time

CHILD = r'''
import json, sys, time
import numpy as np
import dp_audit

def laplace_mean(dataset, n, seed):
    d = np.clip(np.asarray(dataset, dtype=float), 0.0, 1.0)
    mean = float(d.mean()) if d.size else 0.0
    # Records in [0, 1]: the mean moves by at most 1 between neighbours, scale 1 keeps pure:1.
    return mean + np.random.default_rng(seed).laplace(0.0, 1.0, n)

def overhead(dataset, n, seed):
    time.sleep(0.1)
    return laplace_mean(dataset, n, seed)

def per_release(dataset, n, seed):
    time.sleep(0.001 * n)
    return laplace_mean(dataset, n, seed)

mechanism = {"fast": laplace_mean, "overhead": overhead, "per-release": per_release}[sys.argv[1]]
t = time.monotonic()
row = {"case": sys.argv[1]}
try:
    rec = dp_audit.audit_run(mechanism, "pure:1").to_dict()
    effort = rec.get("effort") or {}
    row.update(verdict=rec.get("verdict"),
               layers={l["layer"]: l.get("verdict") or l.get("skipped") for l in rec["layers"]},
               trials_planned=effort.get("trials_planned"),
               trials_run=effort.get("trials_run"), stopped=effort.get("stopped"),
               search_releases_per_side=effort.get("search_releases_per_side"),
               confirmations=[c["releases_per_side"] for c in effort.get("confirmations", [])])
except Exception as e:
    row.update(error=f"{type(e).__name__}: {e}")
row["wall_seconds"] = round(time.monotonic() - t, 1)
print(json.dumps(row), flush=True)
'''


def main(argv):
    cap = 300.0
    if "--cap" in argv:
        i = argv.index("--cap")
        cap = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    cases = argv or ["fast", "overhead", "per-release"]
    print(f"# budget: 60 s (audit_run's default, no --budget or --trials); cap {cap:g} s per case")
    for case in cases:
        t = time.monotonic()
        try:
            out = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True,
                                 text=True, timeout=cap)
            line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else json.dumps(
                {"case": case, "error": out.stderr.strip()[-500:]})
        except subprocess.TimeoutExpired:
            line = json.dumps({"case": case, "error": f"killed at the cap of {cap:g} s",
                               "wall_seconds": round(time.monotonic() - t, 1)})
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
