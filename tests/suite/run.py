#!/usr/bin/env python3
"""Run every case of tests/suite/cases.json through dp-audit with only the manifest's flags.

Usage (from the repository root):
    python3 tests/suite/run.py [--audit ./target/release/audit] [--samples 100000]
                               [--only ID[,ID...]] [--extra "FLAGS..."] [--json-dir DIR]

For each case it runs
    AUDIT run --exec CMD --claim C --record-range=LO:HI --record-dim D --dataset-size N
              --neighbors R --samples S --json --no-report --quiet [EXTRA...]
and prints: id, status, where the bug is (`bug_in`: mechanism or floating-point), exit code (0 no
violation, 1 violation, 2 error), each layer's verdict (M = mechanism layer, F = floating-point
layer: V violation, - none, s skipped) and seconds. The last lines count, per layer: buggy programs
caught by the layer their bug lives in (a float-only bug caught by the floating-point layer and not
by the mechanism layer), and correct programs flagged by each layer. --extra appends flags (e.g.
"--finder corners" or "--transform float-bits") to every run, to see what a change would catch.
"""
import argparse, json, os, shlex, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", default="./target/release/audit")
    ap.add_argument("--samples", type=int, default=100000)
    ap.add_argument("--only", default="")
    ap.add_argument("--extra", default="")
    ap.add_argument("--json-dir", default="")
    a = ap.parse_args()
    with open(os.path.join(ROOT, "tests/suite/cases.json")) as f:
        cases = json.load(f)
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c["id"] in keep]
    if a.json_dir:
        os.makedirs(a.json_dir, exist_ok=True)
    caught = flagged = nb = nc = 0
    by_layer = {"mechanism": [0, 0], "floating-point": [0, 0]}
    flagged_layer = {"mechanism": 0, "floating-point": 0}
    print(f"{'id':40} {'status':8} {'bug in':15} exit  M F  secs")
    for c in cases:
        cmd = [a.audit, "run", "--exec", c["command"], "--claim", c["claim"],
               f"--record-range={c['record_range']}", "--record-dim", str(c["record_dim"]),
               "--dataset-size", str(c["dataset_size"]), "--neighbors", c["neighbors"],
               "--samples", str(a.samples), "--json", "--no-report", "--quiet"]
        cmd += shlex.split(a.extra)
        t0 = time.time()
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        dt = time.time() - t0
        if a.json_dir:
            with open(os.path.join(a.json_dir, c["id"] + ".json"), "w") as f:
                f.write(p.stdout if p.stdout else p.stderr)
        if p.returncode == 2:
            sys.stderr.write(f"{c['id']}: error: {p.stderr.strip()[-500:]}\n")
        verdicts = {}
        try:
            for l in json.loads(p.stdout).get("layers", []):
                v = l["verdict"]
                verdicts[v["layer"]] = "s" if v.get("skipped") else ("V" if v.get("verdict") == "violation" else "-")
        except (ValueError, KeyError, TypeError):
            pass
        mark = lambda k: verdicts.get(k, "?")
        if c["status"] == "buggy":
            nb += 1
            caught += p.returncode == 1
            where = c.get("bug_in", "mechanism")
            by_layer[where][1] += 1
            if where == "mechanism":
                by_layer[where][0] += mark("mechanism") == "V"
            else:
                by_layer[where][0] += mark("floating-point") == "V" and mark("mechanism") != "V"
        else:
            nc += 1
            flagged += p.returncode == 1
            for k in flagged_layer:
                flagged_layer[k] += mark(k) == "V"
        print(f"{c['id']:40} {c['status']:8} {c.get('bug_in', ''):15} {p.returncode:4} {mark('mechanism')} {mark('floating-point')} {dt:5.0f}", flush=True)
    print(f"suite: caught {caught}/{nb} buggy, flagged {flagged}/{nc} correct (exit codes)")
    for k, (hit, n) in by_layer.items():
        print(f"suite: bugs in the {k}: {hit}/{n} caught by the {k} layer" + (" and not by the mechanism layer" if k == "floating-point" else ""))
    for k, f in flagged_layer.items():
        print(f"suite: correct programs flagged by the {k} layer: {f}/{nc}")


if __name__ == "__main__":
    main()
