#!/usr/bin/env python3
"""dp-audit's sequential mode beside the released sequential auditor of González et al.
(NeurIPS 2025, arXiv 2509.07055) on the same streams (issue 37, item 3).

No code of theirs is in this file. Their test is taken from their notebook at run time:
`--notebook PATH` names a copy of `dp_sequential_test/numerical_experiments.ipynb`
(google-research/google-research, commit cacca8e6) kept OUTSIDE this repository, and the driver
executes only the two cells that define the test (cell ids Gf6cEEFt8p2h: `rbf_kernel` and
`get_first_crossing_index`; XNxKyvPuRXBI: `OnlineNewtonStep`, `OnlineGradientAscent`,
`OneSidedTwoSampleSequentialTest`). Those cells need `np` and scipy's `cdist`; the driver supplies
`np` and, where scipy is missing, a numpy Euclidean distance in place of `cdist`.

Their test is O(T^2) with a large constant (Python lists rebuilt at every step: about 100 s for one
run of 10^4 pairs on this machine), so the driver also holds its own re-implementation of the same
recursion with numpy arrays (`FastTheirs`, written from our reading of the cells, about 1 s per run
of 10^4 pairs). `verify` runs both on the same streams and checks that they give the same wealth
path (to 1e-15 relative); the table is computed with `FastTheirs` unless `--theirs exec` is given.

Subcommands (run from the repository root, after `cargo build --release`):

  driver.py verify --notebook NB [--runs 3 --cap 1500]   exec'd cells against FastTheirs
  driver.py run    --notebook NB --out DIR [--quick]       every setting; one JSON line per run
  driver.py table  --out DIR | --runs FILE                 the markdown tables from DIR/runs.jsonl (or FILE, .gz too)
  driver.py mmd    [--n 3000]                              τ against each setting's MMD (why theirs can or cannot reject; 5 min)

Streams: for each setting and seed s, numpy's PCG64 seeded with [setting key, s] draws the 10^4
releases of M(D), then the 10^4 of M(D'); they are written as JSON lines and read by
`audit test --sequential` (ours) and fed pair by pair to their test (theirs).
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import zlib

import numpy as np

ALPHA = 0.05          # their α and our β
CAP = 10_000          # most releases per side, both tests
BW_PAIRS = 20         # their bandwidth rule (empirical_epsilon in the notebook): the median
                      # pairwise distance of the first 20 pairs, which the test then skips
GAUSS_DELTA = 1e-5
THEIR_CELLS = ("Gf6cEEFt8p2h", "XNxKyvPuRXBI")


# ---------------------------------------------------------------------------------------------
# Their test, from the notebook
# ---------------------------------------------------------------------------------------------

def _numpy_cdist(a, b, metric="euclidean"):
    assert metric == "euclidean"
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    d = a[:, None, :] - b[None, :, :]
    return np.sqrt(np.sum(d * d, axis=-1))


def load_their_cells(notebook):
    """Executes only the cells that define their test; returns (namespace, sha256 of the cells)."""
    with open(notebook, encoding="utf-8") as f:
        nb = json.load(f)
    by_id = {c.get("metadata", {}).get("id"): "".join(c["source"]) for c in nb["cells"]}
    missing = [i for i in THEIR_CELLS if i not in by_id]
    if missing:
        sys.exit(f"{notebook}: no cell with id {missing} (expected the notebook at commit cacca8e6)")
    try:
        from scipy.spatial.distance import cdist  # noqa: F401
        cdist_name = "scipy"
    except ImportError:
        cdist = _numpy_cdist
        cdist_name = "numpy stand-in"
    ns = {"np": np, "cdist": cdist, "__name__": "their_cells"}
    h = hashlib.sha256()
    for cid in THEIR_CELLS:
        h.update(by_id[cid].encode())
        exec(compile(by_id[cid], f"{notebook}#{cid}", "exec"), ns)
    return ns, h.hexdigest(), cdist_name


class ExecTheirs:
    """Their OneSidedTwoSampleSequentialTest, exec'd from the notebook, behind a small interface."""

    def __init__(self, ns, epsilon, delta, bw):
        self.t = ns["OneSidedTwoSampleSequentialTest"](epsilon, delta, bw)
        self.tau = self.t.tau

    def step(self, x, y):
        return float(self.t.step(np.array([x]), np.array([y])))


class FastTheirs:
    """Our re-implementation of the same recursion, in arrays (one-dimensional releases).

    Per pair (x_t, y_t), with the RBF kernel k of bandwidth bw:
      g_t = 2 - 2 k(x_t, y_t);  M_t = M_{t-1} + g_t;
      v_t = sum_{i<t} [k(x_i,x_t) - k(x_i,y_t) + k(y_i,y_t) - k(y_i,x_t)] P_i / (2 sqrt(M_i))
            (v_1 = 0): the witness's value on the new pair;
      a_t = v_t / sqrt(M_t) + g_t / (4 M_t);  s_t = sum_{i<t} a_i P_i^2 (summed in order);
      gamma_t = min(1, 1 / (2 sqrt(s_t + a_t)));  P_i <- P_i gamma_t for i < t, P_t = gamma_t;
      payoff_t = v_t - tau;  W_t = W_{t-1} (1 + lambda_t payoff_t);
      then the Online Newton Step bet: z = -payoff/(1 + lambda payoff), S += z^2,
      lambda <- clip(lambda - c z / S, 0, 1/(8 + 4 tau)), c = 2/(2 - ln 3), S_0 = 1, lambda_1 = 0;
      tau = 2[(1 + delta e^-eps)(1 - e^-eps)/(1 + e^-eps) + e^-eps delta].
    The floating-point operations are those of the cells, in the same order (sequential sums
    where they sum in Python, numpy sums where they call np.sum), so the wealth paths agree to
    rounding (`verify`: at most 9e-16 relative over 30 streams of 1480 pairs, the same crossings).
    """

    def __init__(self, epsilon, delta, bw, cap=CAP):
        self.tau = 2 * ((1 + delta * np.exp(-epsilon)) * (1 - np.exp(-epsilon))
                        / (1 + np.exp(-epsilon)) + np.exp(-epsilon) * delta)
        self.two_bw2 = 2 * bw * bw
        self.x = np.empty(cap)
        self.y = np.empty(cap)
        self.m_hist = np.empty(cap)
        self.aux = np.empty(cap)
        self.prod = np.empty(cap)
        self.n = 0
        self.m = 0
        self.wealth = 1
        self.lambd = 0
        self.c = 2 / (2 - np.log(3))
        self.sum_z2 = 1
        self.upper = 1 / (8 + 4 * self.tau)

    def _k(self, a, b):
        d = np.abs(a - b)
        return np.exp(-(d * d) / self.two_bw2)

    def step(self, x, y):
        i = self.n
        self.x[i], self.y[i] = x, y
        kxy = self._k(np.float64(x), np.float64(y))
        inc = np.float64(1.0) + np.float64(1.0) - 2 * kxy
        self.m += inc
        self.m_hist[i] = self.m
        if i == 0:
            v = 0
        else:
            xs, ys = self.x[:i], self.y[:i]
            kern = (self._k(xs, x) - self._k(xs, y)) + self._k(ys, y) - self._k(ys, x)
            v = np.sum(kern * self.prod[:i] / (2 * np.sqrt(self.m_hist[:i])))
        a = v / np.sqrt(self.m) + inc / (4 * self.m)
        self.aux[i] = a
        if i == 0:
            s = 0
        else:
            s = np.cumsum(self.aux[:i] * self.prod[:i] ** 2)[-1]
        gamma = np.min([1, 1 / (2 * np.sqrt(s + a))])
        self.prod[:i] *= gamma
        self.prod[i] = 1 * gamma
        self.n += 1
        payoff = v - self.tau
        self.wealth *= 1 + self.lambd * payoff
        # Online Newton Step, on the payoff just seen.
        z = -payoff / (1 + self.lambd * payoff)
        self.sum_z2 += z ** 2
        self.lambd = max(min(self.lambd - self.c * z / self.sum_z2, self.upper), 0)
        return float(self.wealth)


def median_bandwidth(a, b):
    z = np.concatenate([a[:BW_PAIRS], b[:BW_PAIRS]])
    i, j = np.triu_indices(len(z), k=1)
    return float(np.median(np.abs(z[i] - z[j])))


def run_theirs(a, b, epsilon, delta, cap, make):
    """Their procedure on one stream: bandwidth from the first 20 pairs, then one step per pair
    until the wealth reaches 1/α or the cap. Returns (rejected, pairs read per side at the stop,
    bandwidth, wall seconds)."""
    t0 = time.perf_counter()
    bw = median_bandwidth(a, b)
    test = make(epsilon, delta, bw)
    for t in range(BW_PAIRS, cap):
        w = test.step(float(a[t]), float(b[t]))
        if w >= 1 / ALPHA:   # get_first_crossing_index: the first wealth >= 1/significance
            return True, t + 1, bw, time.perf_counter() - t0
    return False, cap, bw, time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------------------------

def write_jsonl(path, xs):
    with open(path, "w") as f:
        f.write("\n".join(repr(float(x)) for x in xs))
        f.write("\n")


def run_ours(audit, fa, fb, claim, cap, first_batch=None):
    cmd = [audit, "test", "--samples-a", fa, "--samples-b", fb, "--claim", claim,
           "--check", "mechanism", "--sequential", "--failure-probability", str(ALPHA),
           "--max-samples", str(cap), "--json", "--no-report", "-q", "--jobs", "1"]
    if first_batch is not None:
        cmd += ["--first-batch", str(first_batch)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    rec = json.loads(p.stdout)
    seq = rec["section"]["data"]["layers"][0]["sequential"]
    rejected = rec["verdict"] == "violation"
    assert rejected == (p.returncode == 1), (rec["verdict"], p.returncode)
    return rejected, seq["stopping_time"], seq["samples_per_side"], wall


# ---------------------------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------------------------

def analytic_gaussian_sigma(eps, delta, sens=1.0):
    """σ of the analytic Gaussian mechanism (Balle & Wang 2018): the smallest σ with
    Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ, by bisection on log σ."""
    phi = lambda u: 0.5 * math.erfc(-u / math.sqrt(2))
    def d(s):
        return phi(sens / (2 * s) - eps * s / sens) - math.exp(eps) * phi(-sens / (2 * s) - eps * s / sens)
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def broken_mean(rng, data, eps, gaussian, n):
    """The non-private mean of DP-Auditorium's MeanMechanism with the noise scale computed from a
    noisy count (use_noised_counts_for_calculating_noise_scale), as we read its description:
    records clipped to [0, 1]; the budget halved between count and mean; noisy count
    ñ = |D| + Lap(2/ε) drawn per release and never released; output = true mean + noise of scale
    f·(1 − 0)/(ε/2)/ñ, floored at 1e-12 (so ñ ≤ 0 gives an almost exact mean), with f = 1 and
    Laplace noise (δ = 0) or f = √(2 ln(1.25/δ)) and Gaussian noise."""
    data = np.clip(np.asarray(data, dtype=float), 0.0, 1.0)
    noisy_count = len(data) + rng.laplace(0.0, 2.0 / eps, n)
    f = math.sqrt(2 * math.log(1.25 / GAUSS_DELTA)) if gaussian else 1.0
    scale = np.maximum(1e-12, f * 1.0 / (eps / 2) / noisy_count)
    noise = rng.normal(0.0, scale) if gaussian else rng.laplace(0.0, scale)
    return data.sum() / len(data) + noise


def make_settings():
    """(name, group, claimed ε, δ, draw(rng, n) -> (a, b), noise): noise is ("laplace", b) or
    ("gaussian", σ) for the pairs noise against 1 + noise, None for the broken means."""
    S = []
    # (a) the broken mean mechanisms, D = {0}, D' = {0, 1} (add/remove; means 0 and 1/2).
    for eps in (0.01, 0.1):
        for gaussian in (False, True):
            name = f"broken-{'gaussian' if gaussian else 'laplace'}-mean eps={eps}"
            S.append((name, "broken", eps, GAUSS_DELTA if gaussian else 0.0,
                      (lambda g, e: lambda rng, n: (broken_mean(rng, [0.0], e, g, n),
                                                    broken_mean(rng, [0.0, 1.0], e, g, n)))(gaussian, eps),
                      None))
    # (b) correct mean mechanisms at their own ε: public size n, one record 0 -> 1, sensitivity
    # 1/n; releases scaled by n (the tests are scale-free: ours by its events, theirs by the
    # median bandwidth), i.e. x + Lap(1/ε) or x + N(0, σ²) with x = 0 on D and 1 on D'.
    for eps in (0.01, 0.1, 1.0, 2.0):
        S.append((f"laplace-mean eps={eps}", "null", eps, 0.0,
                  (lambda e: lambda rng, n: (rng.laplace(0.0, 1 / e, n), rng.laplace(1.0, 1 / e, n)))(eps),
                  ("laplace", 1 / eps)))
    for eps in (0.01, 0.1, 1.0, 2.0):
        sig = analytic_gaussian_sigma(eps, GAUSS_DELTA)
        S.append((f"gaussian-mean eps={eps}", "null", eps, GAUSS_DELTA,
                  (lambda s: lambda rng, n: (rng.normal(0.0, s, n), rng.normal(1.0, s, n)))(sig),
                  ("gaussian", sig)))
    # (c) a twice-too-large ε: Laplace noise of scale 1/(2ε) under a claim of ε.
    for eps in (0.5, 1.0, 2.0):
        S.append((f"laplace-mean true eps={2 * eps:g} claim={eps}", "power", eps, 0.0,
                  (lambda e: lambda rng, n: (rng.laplace(0.0, 1 / (2 * e), n),
                                             rng.laplace(1.0, 1 / (2 * e), n)))(eps),
                  ("laplace", 1 / (2 * eps))))
    return S


def draw(setting, seed, n=CAP):
    name, _, _, _, fn, *_ = setting
    key = zlib.crc32(name.encode())
    rng = np.random.default_rng([key, seed])
    a, b = fn(rng, n)
    return np.asarray(a, dtype=float), np.asarray(b, dtype=float)


def claim_of(eps, delta):
    return f"pure:{eps:g}" if delta == 0 else f"approx:{eps:g}:{delta:g}"


# ---------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------

def cmd_verify(args):
    ns, digest, cd = load_their_cells(args.notebook)
    print(f"their cells {THEIR_CELLS}: sha256 {digest}; cdist: {cd}")
    worst = 0.0
    for s in make_settings():
        name, group, eps, delta = s[:4]
        for seed in range(args.runs):
            a, b = draw(s, seed)
            bw = median_bandwidth(a, b)
            ex, fa = ExecTheirs(ns, eps, delta, bw), FastTheirs(eps, delta, bw)
            assert ex.tau == fa.tau
            we, wf = [], []
            for t in range(BW_PAIRS, args.cap):
                we.append(ex.step(float(a[t]), float(b[t])))
                wf.append(fa.step(float(a[t]), float(b[t])))
            we, wf = np.array(we), np.array(wf)
            same_nan = np.array_equal(np.isnan(we), np.isnan(wf))
            ok = np.isfinite(we) & np.isfinite(wf)
            rel = float(np.max(np.abs(we[ok] - wf[ok]) / np.maximum(1e-300, np.abs(we[ok])))) if ok.any() else 0.0
            cross = lambda w: int(np.argmax(w >= 1 / ALPHA)) if (w >= 1 / ALPHA).any() else None
            worst = max(worst, rel)
            status = "ok" if same_nan and cross(we) == cross(wf) and rel < 1e-9 else "DIFFER"
            print(f"{name:42s} seed {seed}: {len(we)} steps, max rel. wealth diff {rel:.1e}, "
                  f"crossing exec {cross(we)} fast {cross(wf)}, final {we[-1]:.4g} {status}", flush=True)
            if status != "ok":
                sys.exit(1)
    print(f"all agree (largest relative difference {worst:.1e})")


def plan(args):
    """Runs per setting: ours on seeds 0..n_ours-1, theirs on 0..n_theirs-1 (the same streams)."""
    if args.quick:
        return {"broken": (10, 10), "null": (20, 5), "power": (10, 10)}
    return {"broken": (100, 100), "null": (1000, 100), "power": (100, 100)}


def cmd_run(args):
    os.makedirs(args.out, exist_ok=True)
    work = args.work or os.path.join(args.out, "streams")
    os.makedirs(work, exist_ok=True)
    if args.theirs == "exec":
        ns, digest, cd = load_their_cells(args.notebook)
        make = lambda e, d, bw: ExecTheirs(ns, e, d, bw)
    else:
        _, digest, cd = load_their_cells(args.notebook)   # checked and hashed, not used
        make = lambda e, d, bw: FastTheirs(e, d, bw)
    counts = plan(args)
    out_path = os.path.join(args.out, "runs.jsonl")
    done = set()
    if os.path.exists(out_path):
        for line in open(out_path):
            r = json.loads(line)
            done.add((r["setting"], r["seed"]))
    meta = {"notebook_cells_sha256": digest, "cdist": cd, "theirs": args.theirs, "cap": CAP,
            "alpha": ALPHA, "plan": counts, "audit": args.audit, "first_batch": args.first_batch,
            "ours_only": args.ours_only}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    t_start = time.time()
    with open(out_path, "a") as out:
        for s in make_settings():
            name, group, eps, delta = s[:4]
            if args.only and args.only not in name:
                continue
            n_ours, n_theirs = counts[group]
            for seed in range(max(n_ours, n_theirs)):
                if (name, seed) in done:
                    continue
                a, b = draw(s, seed)
                rec = {"setting": name, "group": group, "claim": claim_of(eps, delta), "seed": seed}
                if seed < n_ours:
                    fa, fb = os.path.join(work, "a.jsonl"), os.path.join(work, "b.jsonl")
                    write_jsonl(fa, a)
                    write_jsonl(fb, b)
                    r, st, read, w = run_ours(args.audit, fa, fb, claim_of(eps, delta), CAP,
                                              args.first_batch)
                    rec.update(ours_rejected=r, ours_stop=st, ours_read=read, ours_s=round(w, 4))
                if seed < n_theirs and not args.ours_only:
                    r, st, bw, w = run_theirs(a, b, eps, delta, CAP, make)
                    rec.update(theirs_rejected=r, theirs_stop=st, theirs_bw=bw, theirs_s=round(w, 3))
                out.write(json.dumps(rec) + "\n")
                out.flush()
            print(f"{time.time() - t_start:7.0f} s  {name} done", flush=True)


def clopper_pearson_upper(k, n, level=0.95):
    """One-sided upper confidence bound on a binomial rate (bisection on the binomial CDF)."""
    if k >= n:
        return 1.0
    def cdf(p):
        return sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                            + (i * math.log(p) if i else 0.0) + (n - i) * math.log1p(-p))
                   for i in range(k + 1))
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if cdf(mid) > 1 - level:
            lo = mid
        else:
            hi = mid
    return hi


def cmd_table(args):
    path = args.runs or os.path.join(args.out, "runs.jsonl")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        runs = [json.loads(l) for l in f]
    settings = make_settings()
    by = {s[0]: [r for r in runs if r["setting"] == s[0]] for s in settings}

    def side(rs, who):
        rs = [r for r in rs if f"{who}_rejected" in r]
        if not rs:
            return None
        # Median stopping time over all runs, a run that never rejected counting as beyond the cap.
        stops = sorted(r[f"{who}_stop"] if r[f"{who}_rejected"] else math.inf for r in rs)
        reads = sorted(r["ours_read"] if r["ours_rejected"] else math.inf for r in rs) if who == "ours" else None
        med = lambda xs: xs[(len(xs) - 1) // 2]   # the lower median
        return {"n": len(rs), "rej": sum(r[f"{who}_rejected"] for r in rs), "stop": med(stops),
                "read": med(reads) if reads else None}

    show = lambda x: "> 10^4" if x == math.inf else str(x)
    print("Broken mechanisms and a twice-too-large ε (median over all runs; a run that did not reject "
          "within 10^4 counts as > 10^4):\n")
    print("| setting | claim | ours: rejected | theirs: rejected | ours: median stop | ours: median read "
          "| theirs: median stop | stop ratio | read ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in settings:
        name, group = s[0], s[1]
        if group == "null" or not by[name]:
            continue
        o, t = side(by[name], "ours"), side(by[name], "theirs")
        ratio = lambda k: (f"{o[k] / t['stop']:.2f}" if o and t and t["stop"] != math.inf
                           and o[k] != math.inf else "–")
        fr = lambda x: f"{x['rej']}/{x['n']}" if x else "–"
        print(f"| {name} | {by[name][0]['claim']} | {fr(o)} | {fr(t)} | {show(o['stop']) if o else '–'} "
              f"| {show(o['read']) if o else '–'} | {show(t['stop']) if t else '–'} | {ratio('stop')} "
              f"| {ratio('read')} |")
    print("\nCorrect mechanisms at their own ε (a rejection is a false alarm; β = α = 0.05; "
          "one-sided 95 % Clopper–Pearson upper bound on the rate):\n")
    print("| setting | claim | ours: false alarms | rate (upper) | theirs: false alarms | rate (upper) |")
    print("|---|---|---|---|---|---|")
    for s in settings:
        name, group = s[0], s[1]
        if group != "null" or not by[name]:
            continue
        o, t = side(by[name], "ours"), side(by[name], "theirs")
        cell = lambda x: (f"{x['rej']}/{x['n']} | {x['rej'] / x['n']:.3f} ({clopper_pearson_upper(x['rej'], x['n']):.3f})"
                          if x else "– | –")
        print(f"| {name} | {by[name][0]['claim']} | {cell(o)} | {cell(t)} |")
    tot_o = sum(r.get("ours_s", 0) for r in runs)
    tot_t = sum(r.get("theirs_s", 0) for r in runs)
    print(f"\nwall seconds: ours {tot_o:.0f} (process start and file reading included), theirs {tot_t:.0f}; "
          f"{len(runs)} streams")
    for s in settings:
        name = s[0]
        both = [r for r in by[name] if r.get("ours_rejected") and r.get("theirs_rejected")]
        if both:
            half = sum(1 for r in both if r["ours_stop"] <= r["theirs_stop"] / 2)
            half_read = sum(1 for r in both if r["ours_read"] <= r["theirs_stop"] / 2)
            print(f"{name}: both rejected on {len(both)} streams; ours' stop at most half of theirs on {half} "
                  f"(its read on {half_read}); ours {min(r['ours_stop'] for r in both)}–"
                  f"{max(r['ours_stop'] for r in both)}, theirs {min(r['theirs_stop'] for r in both)}–"
                  f"{max(r['theirs_stop'] for r in both)}")


def location_mmd(noise, bw):
    """Exact MMD between noise and 1 + noise under the RBF kernel of bandwidth bw:
    MMD² = 2 E[k(Δ) − k(Δ − 1)], Δ the difference of two independent noises. Gaussian: closed
    form; Laplace(b): Δ has density (1 + |u|/b) e^{−|u|/b} / (4b), integrated numerically."""
    kind, sc = noise
    if kind == "gaussian":
        v = bw * bw + 2 * sc * sc
        return math.sqrt(max(0.0, 2 * bw / math.sqrt(v) * (1 - math.exp(-1 / (2 * v)))))
    lim = 60 * sc + 10 * bw + 2
    u = np.linspace(-lim, lim, 2_000_001)
    f = (1 + np.abs(u) / sc) * np.exp(-np.abs(u) / sc) / (4 * sc)
    h = np.exp(-u * u / (2 * bw * bw)) - np.exp(-(u - 1) ** 2 / (2 * bw * bw))
    return math.sqrt(max(0.0, 2 * float(np.sum(f * h)) * (u[1] - u[0])))


def cmd_mmd(args):
    """Why their test can or cannot reject a setting: its payoff is the witness value minus τ,
    and a witness of RKHS norm at most 1 has mean at most MMD(P, Q) under the same kernel, so a
    setting with MMD < τ cannot be rejected at any sample size (the wealth drifts down). Prints τ
    and the MMD at the median-heuristic bandwidth of 2000 pooled releases (their rule uses 20
    pairs, so a run's bandwidth varies around it), and for the location pairs the largest MMD
    over bandwidths 10^-2 to 10^3 (exact, `location_mmd`); for the broken means, a Monte Carlo
    estimate (the unbiased MMD² of n releases per side: their heavy tails make it vary by ±0.05)."""
    print("| setting | τ(ε, δ) | median bandwidth | MMD there | MMD − τ | largest MMD over bandwidths (at bw) |")
    print("|---|---|---|---|---|---|")
    for s in make_settings():
        name, group, eps, delta, _, noise = s
        a, b = draw(s, 10**6, args.n)
        z = np.concatenate([a[:1000], b[:1000]])
        i, j = np.triu_indices(len(z), k=1)
        bw = float(np.median(np.abs(z[i] - z[j])))
        if noise is None:
            n = args.n
            k = lambda u, v: np.exp(-((u[:, None] - v[None, :]) ** 2) / (2 * bw * bw))
            mmd2 = ((k(a, a).sum() - n) + (k(b, b).sum() - n)) / (n * (n - 1)) - 2 * k(a, b).mean()
            mmd, best = math.sqrt(max(0.0, mmd2)), "–"
        else:
            mmd = location_mmd(noise, bw)
            top = max((location_mmd(noise, w), w) for w in np.geomspace(0.01, 1000, 51))
            best = f"{top[0]:.4f} ({top[1]:.3g})"
        tau = FastTheirs(eps, delta, 1.0).tau
        print(f"| {name} | {tau:.4f} | {bw:.3g} | {mmd:.4f} | {mmd - tau:+.4f} | {best} |")
    # How far above the claim a Laplace location pair's true ε must be before its MMD, at the best
    # bandwidth, passes τ (a necessary condition for their test ever to reject it).
    print("\n| claimed ε (pure) | τ | smallest true ε / claimed ε with MMD > τ at some bandwidth |")
    print("|---|---|---|")
    grid = np.geomspace(0.01, 100, 41)
    for claim in (0.01, 0.1, 0.5, 1.0, 1.5, 1.76, 2.0):
        tau = FastTheirs(claim, 0.0, 1.0).tau
        if tau >= math.sqrt(2):
            print(f"| {claim:g} | {tau:.4f} | none (τ ≥ √2) |")
            continue
        lo, hi = 1.0, 1e4
        for _ in range(16):   # a ratio known to 0.06 %
            mid = math.sqrt(lo * hi)
            if max(location_mmd(("laplace", 1 / (mid * claim)), w) for w in grid) > tau:
                hi = mid
            else:
                lo = mid
        print(f"| {claim:g} | {tau:.4f} | {hi:.2f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--notebook", required=True)
    v.add_argument("--runs", type=int, default=2)
    v.add_argument("--cap", type=int, default=1500)
    r = sub.add_parser("run")
    r.add_argument("--notebook", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--work", help="where the stream files go (default OUT/streams; overwritten per run)")
    r.add_argument("--audit", default="target/release/audit")
    r.add_argument("--theirs", choices=("fast", "exec"), default="fast")
    r.add_argument("--quick", action="store_true", help="a few runs per setting (a smoke test)")
    r.add_argument("--only", help="only settings whose name contains this")
    r.add_argument("--first-batch", type=int, help="ours: --first-batch N (default: audit's own, 100)")
    r.add_argument("--ours-only", action="store_true", help="skip their test")
    t = sub.add_parser("table")
    t.add_argument("--out", help="the run's directory (its runs.jsonl)")
    t.add_argument("--runs", help="or a runs file (.jsonl or .jsonl.gz)")
    m = sub.add_parser("mmd")
    m.add_argument("--n", type=int, default=3000)
    args = p.parse_args()
    {"verify": cmd_verify, "run": cmd_run, "table": cmd_table, "mmd": cmd_mmd}[args.cmd](args)


if __name__ == "__main__":
    main()
