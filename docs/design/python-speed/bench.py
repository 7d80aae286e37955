"""In process against the exec protocol, the same pipeline (docs/python.md, "Speed").

For each program (the README's stdlib program examples/exec/textbook_laplace_sum.py and the
numpy count np_count.py), in one session: `audit run --exec PROGRAM … --json` three times, and
`dp_audit.audit_run(callable, …)` with the same words three times, where the callable computes
the same releases from the same requests. Both run `audit run`'s code (fixed pair, one search
trial, ε estimate, confirming audits of both layers); the script checks that their JSON records
are equal, byte for byte, then prints wall times, medians and releases per second.

Run from the repository root, with dp_audit installed and target/release/audit built:
    python docs/design/python-speed/bench.py [AUDIT_BINARY]
"""
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dp_audit  # noqa: E402
from np_count_inproc import np_count  # noqa: E402
from textbook_inproc import textbook_laplace_sum  # noqa: E402

AUDIT = sys.argv[1] if len(sys.argv) > 1 else "target/release/audit"
PAIR = "docs/design/python-speed/pair.jsonl"
SAMPLES = 200_000
FLAGS = ["--finder", "fixed", "--pairs", PAIR, "--trials", "1", "--search-samples", "5000"]
PROGRAMS = [
    ("stdlib (README)", "python3 examples/exec/textbook_laplace_sum.py", textbook_laplace_sum,
     (-5.0, 5.0), 10),
    ("numpy", "python3 docs/design/python-speed/np_count.py", np_count, (0.0, 1.0), 10),
]


def releases(record):
    """Releases drawn, both sides, every stage, as the record counts them."""
    return record["timings"]["releases"]


for label, program, fn, (lo, hi), size in PROGRAMS:
    times = {"exec": [], "in process": []}
    records = {}
    for rep in range(3):
        t = time.perf_counter()
        rec = dp_audit.audit_run(fn, "pure:1", record_range=(lo, hi), dataset_size=size,
                                 samples=SAMPLES, name=program, flags=FLAGS)
        times["in process"].append(time.perf_counter() - t)
        records["in process"] = rec.json()
        words = [AUDIT] + shlex.split(rec.reproduce)[1:] + ["--json", "--no-report", "--quiet"]
        t = time.perf_counter()
        out = subprocess.run(words, capture_output=True, text=True)
        times["exec"].append(time.perf_counter() - t)
        records["exec"] = out.stdout
    same = records["exec"] == records["in process"]
    n = releases(json.loads(records["exec"]))
    print(f"{label}: `{rec.reproduce}`; records equal: {same}; "
          f"releases drawn (both sides, all stages): {n}")
    for path, ts in times.items():
        med = statistics.median(ts)
        rate = f"{n / med:.3g}"
        print(f"  {path:10s}  " + ", ".join(f"{x:.2f}" for x in ts) +
              f" s; median {med:.2f} s; {rate} releases/s")
