#!/usr/bin/env python3
"""A clamped mean whose Laplace noise assumes "at least 10 rows", speaking the exec protocol.

Releases clamp-mean(D) + Lap(b), b = (upper - lower) / (MIN_ROWS * epsilon), rounded to a grid
of 2^-8. The author sized the noise for a mean over at least MIN_ROWS = 10 records, but the
program accepts smaller datasets (an empty one releases 0 + noise): on D = [] vs D' = [upper] the
mean moves by `upper` while the noise scale assumes a move of (upper - lower) / 10, so the true
epsilon there is about 10 * upper / (upper - lower) * epsilon (5 at the defaults), far above the
claimed epsilon = 1. On datasets of 10 or more records the claim holds, so a search must reach
the small datasets to find the bug: a default audit has to run more than a handful of trials.

    audit run --exec 'python3 examples/exec/clamped_mean_min_rows.py' --claim pure:1 --record-range 0:10 --dataset-size 10

--startup S spends about S seconds of CPU before reading the request, as importing numpy or a DP
library does (0.1 to 0.5 s), so that audits can be tried on programs as users write them without
depending on those packages. --cost-us U spends about U microseconds of CPU per release.
--slow-above K --slow-us V: on datasets of more than K records each release costs V
microseconds instead (a library model fit whose cost depends on the data). --min-rows M sets
the rows the noise assumes (M = 1 is the correct mechanism). A request of many datasets
({"datasets": [...], "samples": k, "seed": s}, `--exec-datasets N`) gets one release per
dataset, in order.

--clock wall (the default) measures --startup and --cost-us on the wall clock: the program busy-waits
that long whatever the machine's load, so the time it takes is known exactly (`audit bench probe`
reads it as the true price). --clock cpu measures them on the process's CPU time, as an import or a
library call spends them: a fixed amount of work, which takes longer on a busy machine (`audit
bench pacing` uses it). --clock sleep spends them asleep (time.sleep): the program then takes
as long as it is told even when it has to share the CPU with busy processes, whereas a busy-wait on
the wall clock that is descheduled near its end overruns (under two busy loops on 2 cores, 1 ms
busy-waits took about 3 ms each). --time-log FILE appends, per request, the releases and the
wall seconds the release loop took: what the program really spent (`audit bench probe` compares
the probe's price with it).
"""
import argparse
import json
import math
import random
import sys
import time


CLOCK = time.perf_counter
SLEEP = False


def burn(seconds):
    if SLEEP:
        if seconds > 0:
            time.sleep(seconds)
        return
    end = CLOCK() + seconds
    while CLOCK() < end:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=0.0)
    ap.add_argument("--upper", type=float, default=10.0)
    ap.add_argument("--min-rows", type=int, default=10)
    ap.add_argument("--startup", type=float, default=0.0)
    ap.add_argument("--cost-us", type=float, default=0.0)
    ap.add_argument("--slow-above", type=int, default=-1)
    ap.add_argument("--slow-us", type=float, default=0.0)
    ap.add_argument("--clock", choices=["wall", "cpu", "sleep"], default="wall")
    ap.add_argument("--time-log", default=None)
    a = ap.parse_args()
    global CLOCK, SLEEP
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    SLEEP = a.clock == "sleep"
    burn(a.startup)
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    scale = (a.upper - a.lower) / (a.min_rows * a.epsilon)
    grid = 2.0 ** -8

    def release(dataset):
        rows = [float(r[0] if isinstance(r, list) else r) for r in dataset]
        clamped = [min(max(x, a.lower), a.upper) for x in rows]
        mean = sum(clamped) / max(len(clamped), 1)
        cost = a.cost_us * 1e-6
        if 0 <= a.slow_above < len(rows):
            cost = a.slow_us * 1e-6
        if cost > 0:
            burn(cost)
        u = rng.random() - 0.5
        noise = -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
        return repr(round((mean + noise) / grid) * grid)

    loop_start = time.perf_counter()
    if "datasets" in req:
        # Many datasets, one release each, in order (audit run --exec-datasets N): one
        # start-up for many candidate datasets.
        out = [release(d) for d in req["datasets"]]
    else:
        out = [release(req["dataset"]) for _ in range(int(req["samples"]))]
    if a.time_log:
        with open(a.time_log, "a") as log:
            log.write("%d %r\n" % (len(out), time.perf_counter() - loop_start))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
