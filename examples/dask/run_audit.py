#!/usr/bin/env python3
"""Fan `audit sample` out over a Dask cluster, then `audit test` the shards.

Every Dask task runs one `audit sample` process: shard I of side a or b of one run seed, so
the shard seeds are derived by dp-audit from (run seed, I, side) and never repeat (`audit test`
refuses shards with one seed). Each task writes its shard to a shared directory (written to
FILE.partial and renamed when complete, so a failed task leaves no shard) and returns its path;
the client then runs `audit test` on all the shards, streamed (the hockey-stick tester holds
its training rows in memory and counts the rest shard by shard).

    pip install "dask[distributed]"
    cargo build --release --bin audit
    python3 examples/dask/run_audit.py                      # LocalCluster on this machine
    python3 examples/dask/run_audit.py --scheduler tcp://HOST:8786 --dir /shared/shards

With --scheduler the tasks go to an existing cluster (the shard directory must then be shared
by the workers and the client). With --count-on-cluster the test's held-out releases are
counted on the cluster too, one task per shard (examples/dask/test_shards.py: plan on the
client, count each shard as a task, reduce on the client), which gives the same result, byte
for byte, as `audit test` on the client. Prints one JSON object: the timings, the shards and the test's
verdict and bound; exits with `audit test`'s code (0 no violation, 1 violation, 2 error).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_shards  # noqa: E402  (the sibling example: a test counted shard by shard)


def sample_shard(audit, mechanism, params, side, index, samples, seed, out, jobs):
    """One `audit sample` run (a Dask task): returns (path, seconds)."""
    start = time.time()
    cmd = [audit, "sample", "--mechanism", mechanism, "--side", side,
           "--samples", str(samples), "--seed", str(seed), "--shard-index", str(index),
           "--out", out, "--jobs", str(jobs)]
    for p in params:
        cmd += ["--param", p]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}")
    return out, time.time() - start


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_audit = os.environ.get("AUDIT") or os.path.join(
        here, "..", "..", "target", "release", "audit")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--audit", default=default_audit, help="the audit binary")
    ap.add_argument("--mechanism", default="gaussian-sum-analytic")
    ap.add_argument("--param", action="append", default=[], help="NAME=VALUE, repeatable")
    ap.add_argument("--claim", default=None, help="default: the entry's own claim")
    ap.add_argument("--shards", type=int, default=8, help="shards per side")
    ap.add_argument("--samples", type=int, default=250_000, help="releases per shard")
    ap.add_argument("--seed", type=int, default=0, help="the run's seed")
    ap.add_argument("--format", default="bin", choices=["bin", "jsonl", "jsonl.gz", "zst"])
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--scheduler", default=None, help="address of an existing cluster")
    ap.add_argument("--dir", default=None, help="shard directory (default: a temporary one, removed)")
    ap.add_argument("--check", default=None,
                    help="audit test's --check: mechanism, float or both (its default)")
    ap.add_argument("--count-on-cluster", action="store_true",
                    help="count the test's held-out releases as Dask tasks, one per shard")
    a = ap.parse_args()
    if a.shards < 1 or a.samples < 1 or a.workers < 1:
        sys.exit("run_audit.py: --shards, --samples and --workers must be at least 1")
    audit = os.path.abspath(a.audit)
    if not os.access(audit, os.X_OK):
        sys.exit(f"run_audit.py: {audit} is not an executable (cargo build --release --bin audit, or --audit PATH)")
    from dask.distributed import Client, LocalCluster

    workdir = a.dir or tempfile.mkdtemp(prefix="dp-audit-dask-")
    os.makedirs(workdir, exist_ok=True)
    claim = a.claim
    if claim is None:
        if a.param:
            sys.exit("run_audit.py: with --param, give the claim to test with --claim")
        described = subprocess.run([audit, "describe", a.mechanism, "--json"],
                                   capture_output=True, text=True)
        if described.returncode != 0:
            sys.exit(f"run_audit.py: {described.stderr.strip()}")
        claim = json.loads(described.stdout)["claim"]
    t0 = time.time()
    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    t_cluster = time.time() - t0
    try:
        tasks = [(side, i) for i in range(a.shards) for side in ("a", "b")]
        t1 = time.time()
        futures = [client.submit(sample_shard, audit, a.mechanism, a.param, side, i, a.samples,
                                 a.seed, os.path.join(workdir, f"{side}.{i}.{a.format}"), 1,
                                 key=f"sample-{side}-{i}", pure=False)
                   for side, i in tasks]
        results = client.gather(futures)
        t_sample = time.time() - t1
        shards = {"a": [p for p, _ in results if os.path.basename(p).startswith("a.")],
                  "b": [p for p, _ in results if os.path.basename(p).startswith("b.")]}
        test_args = ["--json", "--no-report", "--seed", str(a.seed)]
        for p in shards["a"]:
            test_args += ["--samples-a", p]
        for p in shards["b"]:
            test_args += ["--samples-b", p]
        test_args += ["--claim", claim]
        if a.check:
            test_args += ["--check", a.check]
        t2 = time.time()
        if a.count_on_cluster:
            code, stdout, stderr = test_shards.test_on_cluster(
                client, audit, test_args, workdir)
        else:
            done = subprocess.run([audit, "test", *test_args], capture_output=True, text=True)
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
        t_test = time.time() - t2
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    out = {
        "workers": a.workers if not a.scheduler else a.scheduler,
        "shards_per_side": a.shards,
        "releases_per_side": a.shards * a.samples,
        "format": a.format,
        "seconds": {"cluster_start": round(t_cluster, 2), "sample": round(t_sample, 2),
                    "sample_task_sum": round(sum(s for _, s in results), 2),
                    "test": round(t_test, 2)},
        "test": "counted on the cluster" if a.count_on_cluster else "on the client",
        "test_exit_code": code,
    }
    if code in (0, 1):
        r = json.loads(stdout)
        out["verdict"] = r["verdict"]
        out["claim"] = r["claim"]
        # One test, or one per layer (mechanism and floating point) in a layered record.
        bounds = r["bounds"] if "bounds" in r else [
            b for layer in r.get("layers", []) for b in layer.get("bounds", [])]
        out["bounds"] = [{"value": b["value"], "allowed": b["allowed"]} for b in bounds]
        out["record_fnv1a"] = fnv1a(stdout.encode())
    else:
        out["error"] = stderr.strip()
    print(json.dumps(out, indent=2))
    if a.dir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(code)


def fnv1a(data):
    """64-bit FNV-1a of the test's output (hex): equal outputs, equal digests."""
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


if __name__ == "__main__":
    main()
