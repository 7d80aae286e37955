#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""`audit test` beside Google's DP-Auditorium testers, timed on the same release samples.

No code of DP-Auditorium is in this file. Its package is imported at run time from a checkout kept
OUTSIDE this repository (`--dpa-src`, e.g. /work/dpa-src/python/dp_auditorium, extracted from
google/differential-privacy; see README.md next to this file for the commit and the venv).

What is timed
  ours    the whole process `AUDIT test --samples-a DIR/n.a.jsonl --samples-b DIR/n.b.jsonl
          --claim pure:1 --tester T --json --no-report -q` (reading and parsing the JSON-lines
          files included), once with the default layers (both) and once with `--check mechanism`;
          wall time by time.perf_counter() around subprocess.run.
  ours, in process (--in-process)  the same test as DP-Auditorium's is timed: in process, on
          numpy arrays already in memory (read before the clock starts), one
          `dp_audit.test_samples(a, b, "pure:1", testers=T, check=LAYERS)` call of the Python
          package (the same engine and record as `audit test`), after one untimed call on the
          smallest sizes (the package's import and its thread pool's start, as their TensorFlow
          import is untimed). Recorded as impl "ours-in-process".
  theirs  in process, on numpy arrays already in memory (the files are read before the clock
          starts, and TensorFlow is imported once, untimed; its import time is written to the
          meta line): building a fresh tester (their config, their default model) plus one
          `estimate_lower_bound(samples_a, samples_b, failure_probability)` call, the call a user
          makes on two sample arrays. Both parts are recorded (construct_s, estimate_s); wall_s
          is their sum.

Their entry points and parameters (their defaults where they have any, their tests' otherwise):
  hockey-stick  testers.hockey_stick_tester.HockeyStickPropertyTester with
                make_default_hs_base_model() (Dense 12-12-12-1, relu) and
                HockeyStickPropertyTesterConfig(training_config=make_default_hs_training_config()
                [2 epochs, batch 100, Adam lr 1e-2], approximate_dp=ApproximateDp(1.0, 0.0),
                evaluation_batch_size=1000 [their default]); 1-D arrays (reshaped by them).
  renyi         testers.renyi_tester.RenyiPropertyTester with make_default_renyi_base_model()
                (Dense 100-100-1, tanh) and RenyiPropertyTesterConfig(alpha=3.0,
                training_config=TrainingConfig(training_epochs=5, batch_size=128,
                optimizer_learning_rate=1e-3, model_output_coordinate_bound=16*eps),
                privacy_property=PrivacyProperty(pure_dp=PureDp(1.0))): there is no default
                training config for this tester; these are the values of their renyi_tester_test.
                (n, 1) arrays, as in their tests (their Dense layers need a 2-D input).
  mmd           testers.mmd_tester.MMDPropertyTester with MMDPropertyTesterConfig(
                kernel=Kernel.KERNEL_RBF, bandwidth=0.1, approximate_dp=ApproximateDp(1.0, 0.0))
                (kernel and bandwidth of their mmd_tester_test; there is no default); 1-D arrays,
                as in their tests.
  failure_probability = 0.001 for all three (our default β); it does not change their running
  time. Before each run, tf.keras.utils.set_random_seed(seed + run).

Their package __init__ imports the Vizier dataset generators and the mechanisms (google-vizier,
jax, pipeline-dp ...), which the testers do not use; the driver therefore registers an empty
`dp_auditorium` package whose __path__ is the checkout, so that only `dp_auditorium.testers` (and
what it imports: configs, interfaces, numpy, tensorflow, etils) is loaded. Their code is unchanged.

Subcommands (from the repository root):
  dpa_driver.py run   --dpa-src PATH --audit target/release/audit --data /work/bench54
                      [--runs 6] [--ns 1000,10000,100000,1000000] [--ns-other 1000,10000,100000]
                      [--testers hockey-stick,renyi,mmd] [--only ours|theirs] --out FILE.jsonl
  dpa_driver.py table FILE.jsonl[.gz] [FILE2 ...]

`run` appends to --out: one meta line (kind "meta") then one JSON line per (impl, tester, n,
layers, run), and prints the markdown table of the lines it wrote. `--ns` are the sizes for the
hockey-stick tester, `--ns-other` those for renyi and mmd. `table` rebuilds the table (medians)
from any number of such files, e.g. theirs from dpa-runs.jsonl and ours from a later run.
"""
import argparse
import contextlib
import gzip
import io
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import types

TESTERS = ("hockey-stick", "renyi", "mmd")
EPS = 1.0
BETA = 1e-3


def parse_ns(text):
    return [int(float(x)) for x in text.split(",") if x.strip()]


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def sample_paths(data, n):
    return os.path.join(data, f"{n}.a.jsonl"), os.path.join(data, f"{n}.b.jsonl")


# ---------------------------------------------------------------- theirs

def find_package_root(path):
    """The directory that holds the `dp_auditorium` package directory."""
    for cand in (path, os.path.join(path, "python", "dp_auditorium")):
        if os.path.isdir(os.path.join(cand, "dp_auditorium", "testers")):
            return os.path.abspath(cand)
    sys.exit(f"no dp_auditorium/testers under {path} (give the folder that holds dp_auditorium/)")


def dpa_commit(root):
    for d in (root, os.path.dirname(root), os.path.dirname(os.path.dirname(root)),
              os.path.dirname(os.path.dirname(os.path.dirname(root)))):
        f = os.path.join(d, "COMMIT")
        if os.path.isfile(f):
            return open(f).read().strip()
    return None


class Theirs:
    def __init__(self, dpa_src):
        self.root = find_package_root(dpa_src)
        t0 = time.perf_counter()
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import numpy as np
        import tensorflow as tf
        # An empty package whose __path__ is their checkout: its __init__ (Vizier, jax,
        # pipeline-dp) is skipped; submodules import from their files unchanged.
        pkg = types.ModuleType("dp_auditorium")
        pkg.__path__ = [os.path.join(self.root, "dp_auditorium")]
        sys.modules["dp_auditorium"] = pkg
        from dp_auditorium.configs import privacy_property as pp
        from dp_auditorium.configs import property_tester_config as ptc
        from dp_auditorium.testers import hockey_stick_tester as hst
        from dp_auditorium.testers import mmd_tester
        from dp_auditorium.testers import renyi_tester
        self.import_s = time.perf_counter() - t0
        self.np, self.tf = np, tf
        self.pp, self.ptc, self.hst, self.mmd, self.renyi = pp, ptc, hst, mmd_tester, renyi_tester

    def versions(self):
        try:
            import keras
            kv = keras.__version__
        except (ImportError, AttributeError):
            kv = None
        return {"tensorflow": self.tf.__version__, "numpy": self.np.__version__, "keras": kv}

    def load(self, path, two_d):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        arr = self.np.asarray(rows, dtype=self.np.float64)
        if arr.ndim == 1 and two_d:
            arr = arr.reshape(-1, 1)
        return arr

    def make(self, tester):
        pp, ptc = self.pp, self.ptc
        if tester == "hockey-stick":
            cfg = ptc.HockeyStickPropertyTesterConfig(
                training_config=self.hst.make_default_hs_training_config(),
                approximate_dp=pp.ApproximateDp(epsilon=EPS, delta=0.0))
            return self.hst.HockeyStickPropertyTester(
                config=cfg, base_model=self.hst.make_default_hs_base_model())
        if tester == "renyi":
            cfg = ptc.RenyiPropertyTesterConfig(
                alpha=3.0,
                training_config=ptc.TrainingConfig(
                    training_epochs=5, batch_size=128, optimizer_learning_rate=1e-3,
                    model_output_coordinate_bound=16 * EPS),
                privacy_property=pp.PrivacyProperty(pure_dp=pp.PureDp(epsilon=EPS)))
            return self.renyi.RenyiPropertyTester(
                cfg, base_model=self.renyi.make_default_renyi_base_model())
        if tester == "mmd":
            cfg = ptc.MMDPropertyTesterConfig(
                kernel=ptc.Kernel.KERNEL_RBF, bandwidth=0.1,
                approximate_dp=pp.ApproximateDp(epsilon=EPS, delta=0.0))
            return self.mmd.MMDPropertyTester(cfg)
        raise ValueError(tester)

    def run_once(self, tester, a, b, seed):
        self.tf.keras.utils.set_random_seed(seed)
        sink = io.StringIO()  # Keras' evaluate() progress bar
        with contextlib.redirect_stdout(sink):
            t0 = time.perf_counter()
            obj = self.make(tester)
            t1 = time.perf_counter()
            lb = obj.estimate_lower_bound(a, b, BETA)
            t2 = time.perf_counter()
        lb = float(lb)
        # A NaN bound (their Renyi error term at these settings, see README) is written as null:
        # strict JSON has no NaN.
        return {"construct_s": t1 - t0, "estimate_s": t2 - t1, "wall_s": t2 - t0,
                "lower_bound": lb if math.isfinite(lb) else None,
                "reject": bool(obj.reject_property(lb))}


# ---------------------------------------------------------------- ours

def ours_cmd(audit, a, b, tester, layers):
    cmd = [audit, "test", "--samples-a", a, "--samples-b", b, "--claim", f"pure:{EPS:g}",
           "--tester", tester, "--json", "--no-report", "-q"]
    if layers == "mechanism":
        cmd += ["--check", "mechanism"]
    return cmd


def ours_once(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    rec = {"wall_s": wall, "rc": p.returncode}
    try:
        out = json.loads(p.stdout)
        rec["verdicts"] = {l.get("layer"): l.get("verdict") for l in out.get("layers", [])}
    except (ValueError, AttributeError):
        rec["stdout_head"] = p.stdout[:300].decode("utf-8", "replace")
    if p.returncode not in (0, 1):  # 2 = error (bad input), or crashed: keep the message
        rec["stderr_tail"] = p.stderr[-500:].decode("utf-8", "replace")
    return rec


class OursInProcess:
    """Our Python package (dp_audit), imported once; arrays loaded as theirs are."""

    def __init__(self):
        import numpy as np
        t0 = time.perf_counter()
        import dp_audit
        self.import_s = time.perf_counter() - t0
        self.np, self.dp = np, dp_audit

    def load(self, path):
        with open(path) as f:
            return self.np.asarray([json.loads(line) for line in f if line.strip()],
                                   dtype=self.np.float64)

    def run_once(self, tester, a, b, layers):
        t0 = time.perf_counter()
        rec = self.dp.test_samples(a, b, f"pure:{EPS:g}", testers=tester, check=layers)
        wall = time.perf_counter() - t0
        return {"wall_s": wall, "rc": rec.code}


# ---------------------------------------------------------------- run

def git_head(path):
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip() != ""
        return head + ("-dirty" if dirty else "")
    except OSError:
        return None


def cmd_run(args):
    testers = [t.strip() for t in args.testers.split(",") if t.strip()]
    for t in testers:
        if t not in TESTERS:
            sys.exit(f"unknown tester {t}")
    plan = [(t, n) for t in testers for n in (parse_ns(args.ns) if t == "hockey-stick"
                                               else parse_ns(args.ns_other))]
    for t, n in plan:
        for p in sample_paths(args.data, n):
            if not os.path.isfile(p):
                sys.exit(f"missing {p}")
    do_ours = args.only in (None, "ours")
    do_theirs = args.only in (None, "theirs")
    if do_ours and not args.audit and not args.in_process:
        sys.exit("--audit is required unless --only theirs")
    if do_theirs and not args.dpa_src:
        sys.exit("--dpa-src is required unless --only ours")

    meta = {"kind": "meta", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host": socket.gethostname(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "data": os.path.abspath(args.data), "runs": args.runs, "seed": args.seed,
            "eps": EPS, "failure_probability": BETA, "loadavg": loadavg(), "only": args.only,
            "niceness": os.nice(0), "argv": sys.argv[1:]}
    theirs = None
    if do_theirs:
        theirs = Theirs(args.dpa_src)
        meta.update({"dpa_root": theirs.root, "dpa_commit": dpa_commit(theirs.root),
                     "dpa_import_s": theirs.import_s, **theirs.versions()})
    inproc = None
    if do_ours and args.in_process:
        inproc = OursInProcess()
        meta.update({"impl_ours": "ours-in-process", "dp_audit_version": inproc.dp.__version__,
                     "dp_audit_import_s": inproc.import_s,
                     "dp_audit_git": git_head(os.path.dirname(os.path.abspath(__file__)))})
        warm = sample_paths(args.data, min(n for _, n in plan))
        wa, wb = inproc.load(warm[0]), inproc.load(warm[1])
        t0 = time.perf_counter()
        for tester in testers:
            inproc.run_once(tester, wa, wb, "both")
        meta["warm_up_s"] = time.perf_counter() - t0
    elif do_ours:
        audit = os.path.abspath(args.audit)
        v = subprocess.run([audit, "--version"], capture_output=True, text=True).stdout.strip()
        meta.update({"audit": audit, "audit_version": v,
                     "audit_git": git_head(os.path.dirname(audit))})

    written = []
    with open(args.out, "a") as out:
        def emit(rec):
            out.write(json.dumps(rec) + "\n")
            out.flush()
            written.append(rec)

        emit(meta)
        for tester, n in plan:
            a_path, b_path = sample_paths(args.data, n)
            if do_theirs:
                two_d = tester == "renyi"
                a, b = theirs.load(a_path, two_d), theirs.load(b_path, two_d)
                for r in range(args.runs):
                    rec = theirs.run_once(tester, a, b, args.seed + r)
                    rec.update({"kind": "run", "impl": "dp-auditorium", "tester": tester, "n": n,
                                "layers": None, "run": r, "loadavg": loadavg()})
                    emit(rec)
                    print(f"theirs {tester:12s} n={n:>8d} run {r}: {rec['wall_s']:.3f} s "
                          f"(lb {rec['lower_bound']})", file=sys.stderr)
                del a, b
            if inproc is not None:
                a, b = inproc.load(a_path), inproc.load(b_path)
                for r in range(args.runs):
                    for layers in ("both", "mechanism"):
                        rec = inproc.run_once(tester, a, b, layers)
                        rec.update({"kind": "run", "impl": "ours-in-process", "tester": tester,
                                    "n": n, "layers": layers, "run": r, "loadavg": loadavg()})
                        emit(rec)
                        print(f"ours in process {tester:12s} n={n:>8d} {layers:9s} run {r}: "
                              f"{rec['wall_s']:.4f} s rc {rec['rc']}", file=sys.stderr)
                del a, b
            elif do_ours:
                for r in range(args.runs):
                    for layers in ("both", "mechanism"):  # interleaved: same load for both
                        rec = ours_once(ours_cmd(audit, a_path, b_path, tester, layers))
                        rec.update({"kind": "run", "impl": "ours", "tester": tester, "n": n,
                                    "layers": layers, "run": r, "loadavg": loadavg()})
                        emit(rec)
                        print(f"ours   {tester:12s} n={n:>8d} {layers:9s} run {r}: "
                              f"{rec['wall_s']:.3f} s rc {rec['rc']}", file=sys.stderr)
    print(table(written))


# ---------------------------------------------------------------- table

def read_lines(paths):
    recs = []
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt") as f:
            recs += [json.loads(l) for l in f if l.strip()]
    return recs


def fmt_s(x):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f} s"
    if x >= 1:
        return f"{x:.2f} s"
    return f"{x * 1000:.1f} ms" if x >= 0.01 else f"{x * 1000:.2f} ms"


def fmt_ratio(num, den):
    if num is None or den is None or den <= 0:
        return "–"
    r = num / den
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


def table(recs):
    """The side-by-side table of the whole process (impl "ours"), then, when there are runs
    of the Python package in process (impl "ours-in-process"), the same table for those."""
    out = table_of(recs, "ours", "Ours: the whole `audit test` process, reading the JSON-lines "
                   "files")
    if any(r.get("impl") == "ours-in-process" for r in recs):
        out += "\n\n" + table_of(recs, "ours-in-process", "Ours: one `dp_audit.test_samples` "
                                   "call in process on in-memory numpy arrays, as theirs")
    return out


def table_of(recs, ours, what):
    groups = {}
    for r in recs:
        if r.get("kind") != "run":
            continue
        key = (r["impl"], r["tester"], r["n"], r.get("layers"))
        groups.setdefault(key, []).append(r["wall_s"])
    med = {k: (statistics.median(v), len(v)) for k, v in groups.items()}
    rows = sorted({(k[1], k[2]) for k in med if k[0] == ours},
                  key=lambda x: (TESTERS.index(x[0]), x[1]))
    lines = ["| tester | releases per side | ours, both layers | ours, --check mechanism | "
             "DP-Auditorium | ratio (both) | ratio (mechanism) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for tester, n in rows:
        both = med.get((ours, tester, n, "both"), (None, 0))
        mech = med.get((ours, tester, n, "mechanism"), (None, 0))
        dpa = med.get(("dp-auditorium", tester, n, None), (None, 0))
        runs = {both[1], mech[1], dpa[1]} - {0}
        lines.append(f"| {tester} | {n:,} | {fmt_s(both[0])} | {fmt_s(mech[0])} | {fmt_s(dpa[0])} | "
                     f"{fmt_ratio(dpa[0], both[0])} | {fmt_ratio(dpa[0], mech[0])} |")
    lines.append("")
    lines.append("Medians of wall time per run (runs per cell: "
                 + ", ".join(sorted({str(c) for _, c in med.values()})) + "). Ratio = "
                 "DP-Auditorium / ours (how many times longer theirs takes). " + what + "; "
                 "DP-Auditorium: tester construction + estimate_lower_bound on in-memory numpy "
                 "arrays.")
    return "\n".join(lines)


def cmd_table(args):
    print(table(read_lines(args.files)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="time the testers; append JSON lines to --out")
    r.add_argument("--dpa-src", help="folder holding dp_auditorium/ (or a checkout's root)")
    r.add_argument("--audit", help="our binary, e.g. target/release/audit")
    r.add_argument("--data", required=True, help="folder of {n}.a.jsonl / {n}.b.jsonl")
    r.add_argument("--runs", type=int, default=6)
    r.add_argument("--ns", default="1000,10000,100000,1000000", help="hockey-stick sizes")
    r.add_argument("--ns-other", default="1000,10000,100000", help="renyi and mmd sizes")
    r.add_argument("--testers", default=",".join(TESTERS))
    r.add_argument("--only", choices=("ours", "theirs"))
    r.add_argument("--in-process", action="store_true",
                   help="ours through the Python package (dp_audit) in this process, not --audit")
    r.add_argument("--seed", type=int, default=0, help="their runs: TF/numpy seed = seed + run")
    r.add_argument("--out", required=True, help="JSON lines, appended to")
    r.set_defaults(func=cmd_run)
    t = sub.add_parser("table", help="the markdown table of medians from JSON-lines files")
    t.add_argument("files", nargs="+")
    t.set_defaults(func=cmd_table)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
