#!/usr/bin/env python3
"""ab.py A B N REPS [extra args]: interleaved `audit test` runs of two builds on /work/bench54/N.{a,b}.jsonl"""
import os, sys, time, statistics, subprocess
A, B, N, REPS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
extra = sys.argv[5:]
data = os.environ.get("DATA", "/work/bench54")
res = {A: [], B: []}
def run(binary):
    args = [binary, "test", "--samples-a", f"{data}/{N}.a.jsonl", "--samples-b", f"{data}/{N}.b.jsonl",
            "--claim", "pure:1", "--json"] + extra
    t = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    w = time.perf_counter() - t
    return w * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_minflt, ru.ru_maxrss / 1024
for r in range(REPS):
    for b in ((A, B) if r % 2 == 0 else (B, A)):
        res[b].append(run(b))
print(f"== {N} {REPS} {' '.join(extra)} (A = {A}, B = {B})")
for name, b in (("A", A), ("B", B)):
    xs = res[b]
    med = [statistics.median(x[i] for x in xs) for i in range(4)]
    q1 = statistics.quantiles([x[0] for x in xs], n=4)[0] if len(xs) > 1 else med[0]
    print(f"{name}: wall {med[0]:7.2f} ms  cpu {med[1]:7.2f} ms  minflt {med[2]:7.0f}  maxrss {med[3]:6.1f} MB  (wall q1 {q1:.2f})")
