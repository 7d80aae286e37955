#!/usr/bin/env python3
"""A noisy sum and a noisy count, each given the whole budget (composition not accounted).

Implements: records rounded to integers and clamped to [0, 5]; release
  (sum + G(5/eps), count + G(1/eps)), two-sided geometric noise with a = e^{-eps/5} for the sum
  (sensitivity 5) and a = e^{-eps} for the count, so each release alone is eps-DP; the pair is
  claimed eps-DP although sequential composition gives 2 eps (the budget should be split, e.g.
  eps/2 each, as the mean of diffprivlib or OpenDP's make_mean compositions do).
Source: the composition mistake of releasing several statistics each at the full budget,
  Dwork & Roth 2014, Theorem 3.14 (basic composition); a frequent finding of DP code reviews
  (e.g. Tramèr et al., "Debugging Differential Privacy: A Case Study for Privacy Auditing",
  2022, on unaccounted releases).
Claim: pure:1, records in [0, 5], dimension 1, 20 records, add-remove.
True privacy loss: 2 (= 2 eps): adding a record 5 moves the sum by 5 and the count by 1, each
  loss 1, independent noises: the losses add on the outputs beyond both means.
"""
import argparse, json, math, random, sys


def geometric(rand, log_alpha):
    return int(math.floor(math.log(1.0 - rand()) / log_alpha))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    xs = [min(max(int(round(float(r[0] if isinstance(r, list) else r))), 0), 5) for r in req["dataset"]]
    s, c = sum(xs), len(xs)
    rand = rng.random
    la_sum, la_cnt = -a.epsilon / 5.0, -a.epsilon  # BUG: each query at the whole budget
    out = []
    for _ in range(int(req["samples"])):
        ns = s + geometric(rand, la_sum) - geometric(rand, la_sum)
        nc = c + geometric(rand, la_cnt) - geometric(rand, la_cnt)
        out.append("[%d, %d]" % (ns, nc))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
