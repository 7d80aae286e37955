#!/usr/bin/env python3
"""`audit test` on many shards, the held-out releases counted as Dask tasks (one per shard).

The held-out part of a test is a sum of counts over events chosen on the training split, so
it splits into three steps of `audit test` (docs/test.md, "Counting shards as tasks"):

1. on the client, `audit test ... --plan-out PLAN`: the events chosen on the training rows
   (the first rows of each side), with the test's settings and every shard's size;
2. one Dask task per shard, `audit test --plan PLAN --count-shard SHARD`: that shard's
   held-out releases counted against the plan's events (integers, printed as JSON);
3. on the client, `audit test --plan PLAN --reduce COUNTS...`: the counts summed and the test
   finished: the same record, byte for byte, as `audit test ...` on one machine.

    pip install "dask[distributed]"
    cargo build --release --bin audit
    python3 examples/dask/test_shards.py -- --samples-a a.0.bin --samples-a a.1.bin \\
        --samples-b b.0.bin --samples-b b.1.bin --claim pure:1 --json
    python3 examples/dask/test_shards.py --scheduler tcp://HOST:8786 -- ...   # an existing cluster

Everything after `--` is `audit test`'s own flags; the output flags (--json, --no-report,
--report-dir, --quiet) go to the last step, the others to the first. The shards must be
readable by the workers under the same names (a shared directory; the tasks run in the
client's working directory). Prints what `audit test` prints and exits with its code (0 no
violation, 1 violation, 2 error); --compare also runs the plain `audit test` on the client
and fails (exit 3) unless its output has the same bytes.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

# Flags of `audit test` that choose what is printed or where the report goes: given to the
# reduce step (which prints the result), not to the plan step.
OUTPUT_FLAGS = {"--json": 0, "--no-report": 0, "--quiet": 0, "-q": 0, "--report-dir": 1}


def split_args(test_args):
    """(plan step flags, reduce step flags) of `audit test`'s flags."""
    plan, out = [], []
    i = 0
    while i < len(test_args):
        a = test_args[i]
        name = a.split("=", 1)[0]
        if name in OUTPUT_FLAGS:
            takes = OUTPUT_FLAGS[name] if "=" not in a else 0
            out += test_args[i:i + 1 + takes]
            i += 1 + takes
        else:
            plan.append(a)
            i += 1
    return plan, out


def count_shard(audit, plan_text, shard, cwd, jobs):
    """One Dask task: the counts of one shard against the plan (JSON text)."""
    fd, plan_path = tempfile.mkstemp(prefix="dp-audit-plan-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(plan_text)
        cmd = [audit, "test", "--plan", plan_path, "--count-shard", shard, "--jobs", str(jobs)]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout
    finally:
        os.remove(plan_path)


def test_on_cluster(client, audit, test_args, workdir, jobs=1):
    """The three steps on `client`; returns (exit code, stdout, stderr) of the reduce step (or
    of the step that failed)."""
    import json

    plan_flags, out_flags = split_args(test_args)
    plan_path = os.path.join(workdir, "plan.json")
    planned = subprocess.run([audit, "test", *plan_flags, "--plan-out", plan_path, "--json"],
                             capture_output=True, text=True)
    if planned.returncode != 0:
        return planned.returncode, planned.stdout, planned.stderr
    with open(plan_path) as f:
        plan_text = f.read()
    summary = json.loads(planned.stdout)
    # A file on both sides (a null test) is counted once: its counts name both places.
    shards = list(dict.fromkeys(summary["shards_a"] + summary["shards_b"]))
    cwd = os.getcwd()
    futures = [client.submit(count_shard, audit, plan_text, s, cwd, jobs,
                             key=f"count-shard-{k}", pure=False)
               for k, s in enumerate(shards)]
    counts = client.gather(futures)
    files = []
    for k, text in enumerate(counts):
        path = os.path.join(workdir, f"counts.{k}.json")
        with open(path, "w") as f:
            f.write(text)
        files.append(path)
    reduced = subprocess.run([audit, "test", "--plan", plan_path, *out_flags, "--reduce", *files],
                             capture_output=True, text=True)
    return reduced.returncode, reduced.stdout, reduced.stderr


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_audit = os.environ.get("AUDIT") or os.path.join(
        here, "..", "..", "target", "release", "audit")
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("test_shards.py: give audit test's flags after --, e.g. "
                 "test_shards.py -- --samples-a a.bin --samples-b b.bin --claim pure:1")
    k = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--audit", default=default_audit, help="the audit binary")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--jobs", type=int, default=1, help="threads of each counting task")
    ap.add_argument("--scheduler", default=None, help="address of an existing cluster")
    ap.add_argument("--dir", default=None,
                    help="where the plan and the counts go (default: a temporary one, removed)")
    ap.add_argument("--compare", action="store_true",
                    help="also run the plain audit test here; exit 3 unless the bytes agree")
    a = ap.parse_args(argv[:k])
    test_args = argv[k + 1:]
    if a.workers < 1 or a.jobs < 1:
        sys.exit("test_shards.py: --workers and --jobs must be at least 1")
    audit = os.path.abspath(a.audit)
    if not os.access(audit, os.X_OK):
        sys.exit(f"test_shards.py: {audit} is not an executable "
                 "(cargo build --release --bin audit, or --audit PATH)")
    from dask.distributed import Client, LocalCluster

    workdir = a.dir or tempfile.mkdtemp(prefix="dp-audit-counts-")
    os.makedirs(workdir, exist_ok=True)
    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        code, out, err = test_on_cluster(client, audit, test_args, workdir, a.jobs)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    sys.stdout.write(out)
    sys.stderr.write(err)
    if a.compare and code in (0, 1):
        plain = subprocess.run([audit, "test", *test_args], capture_output=True, text=True)
        if plain.returncode != code or plain.stdout != out:
            sys.stderr.write("test_shards.py: the plain audit test printed other bytes "
                             f"(exit {plain.returncode}):\n{plain.stdout}")
            code = 3
        else:
            sys.stderr.write("test_shards.py: the plain audit test printed the same bytes\n")
    if a.dir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
