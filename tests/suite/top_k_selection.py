#!/usr/bin/env python3
"""Top-k keys with noisy counts; by default the k keys are chosen on the true counts and only
the released counts are noised.

Implements: records in [0, 8) are keys (floor, clamped to 0..7); the release is k = 3 pairs
  (key, noisy count of that key), [key1, count1, key2, count2, key3, count3]. Buggy default: the
  keys are the k largest true counts (ties to the lower key) and each released count gets
  two-sided geometric noise at eps/k (the integer Laplace; k counts of sensitivity 1 under
  add-remove), as if selecting were free. `--correct 1`: the keys are chosen by peeling, k
  rounds of the exponential mechanism through the Gumbel-max trick (Gumbel noise of scale
  2/eps_sel on the remaining counts, eps_sel = eps/(2k) per round) and each released count gets
  geometric noise at eps/(2k): k selections and k counts, eps in all.
Source: Durfee & Rogers, "Practical differentially private top-k selection with pay-what-you-get
  composition" (NeurIPS 2019) on choosing the keys privately; Korolova et al. (WWW 2009) on
  releasing keys read off the data; the selection-on-true-values mistake of "noisy top-k"
  pipelines that only noise the released values.
Claim: pure:1, records in [0, 8], dimension 1, 20 records, add-remove.
True privacy loss: default: infinite (adding a record to a key tied with the k-th largest moves
  that key into the top k deterministically: disjoint supports of the key coordinates);
  `--correct 1`: at most eps = 1 (basic composition of 2k mechanisms at eps/(2k) each; the
  exponential mechanism with utility sensitivity 1 at scale 2/eps_sel is eps_sel-DP).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--correct", type=int, default=0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    counts = [0] * a.keys
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        counts[min(max(int(math.floor(x)), 0), a.keys - 1)] += 1
    k = a.k
    eps_value = a.epsilon / (2 * k) if a.correct else a.epsilon / k
    eps_sel = a.epsilon / (2 * k)
    rand, log, floor = rng.random, math.log, math.floor

    def geometric():
        # Two-sided geometric with ratio e^{-eps_value}: the difference of two geometrics.
        g1 = int(floor(log(1.0 - rand()) / -eps_value))
        g2 = int(floor(log(1.0 - rand()) / -eps_value))
        return g1 - g2

    if not a.correct:
        # BUG: the selection reads the true counts (ties to the lower key).
        fixed = sorted(range(a.keys), key=lambda j: (-counts[j], j))[:k]
    out = []
    for _ in range(int(req["samples"])):
        if a.correct:
            left = list(range(a.keys))
            chosen = []
            for _ in range(k):
                scale = 2.0 / eps_sel
                # Gumbel(0, scale) by inversion: -scale ln(-ln u), u uniform on (0, 1).
                noisy = [counts[j] - scale * log(-log(rand() + 2.0 ** -54)) for j in left]
                best = left[max(range(len(left)), key=lambda i: noisy[i])]
                chosen.append(best)
                left.remove(best)
        else:
            chosen = fixed
        vals = []
        for j in chosen:
            vals += [str(j), str(counts[j] + geometric())]
        out.append("[" + ", ".join(vals) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
