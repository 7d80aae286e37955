#!/usr/bin/env python3
"""Protocol check of every suite program: right line count, one JSON number or a fixed-length
array per line, finite numbers, same seed -> same bytes, another seed -> other bytes, on a
random dataset of the manifest's size and dimension (and on the neighbour sizes)."""
import json, math, os, random, shlex, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
cases = json.load(open(os.path.join(ROOT, "tests/suite/cases.json")))
bad = 0
for c in cases:
    lo, hi = (float(x) for x in c["record_range"].split(":"))
    rnd = random.Random(1)
    def rec():
        v = [rnd.uniform(lo, hi) for _ in range(c["record_dim"])]
        return v[0] if c["record_dim"] == 1 else v
    problems = []
    for n in (c["dataset_size"], c["dataset_size"] + 1, 1):
        data = [rec() for _ in range(n)]
        outs = []
        for seed in (7, 7, 8):
            req = json.dumps({"dataset": data, "samples": 500, "seed": seed})
            p = subprocess.run(shlex.split(c["command"]), input=req, capture_output=True,
                               text=True, cwd=ROOT)
            if p.returncode != 0:
                problems.append(f"exit {p.returncode}: {p.stderr[-200:]}")
                break
            lines = p.stdout.splitlines()
            if len(lines) != 500:
                problems.append(f"{len(lines)} lines")
            vals = [json.loads(l) for l in lines]
            lens = {len(v) if isinstance(v, list) else 0 for v in vals}
            if len(lens) != 1:
                problems.append(f"ragged {lens}")
            flat = [x for v in vals for x in (v if isinstance(v, list) else [v])]
            if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in flat):
                problems.append("non-finite or non-number")
            outs.append(p.stdout)
        constant = len(outs) == 3 and len(set(outs[0].splitlines())) == 1  # no noise drawn
        if len(outs) == 3 and (outs[0] != outs[1] or (outs[0] == outs[2] and not constant)):
            problems.append("seeding")
    print(f"{c['id']:40} {'ok' if not problems else '; '.join(problems)}")
    bad += bool(problems)
sys.exit(1 if bad else 0)
