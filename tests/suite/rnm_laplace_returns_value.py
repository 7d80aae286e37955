#!/usr/bin/env python3
"""Report noisy max that returns the noisy maximum VALUE (StatDP's noisy_max_v1b).

Implements: score_i = column sum i of the records (coordinates clamped to [0, 1]: each record
  gives up to one vote to each of 5 candidates), release max_i (score_i + Lap(2/eps)).
  Returning the argmax would be eps-DP; returning the value is not.
Source: Ding, Wang, Wang, Zhang, Kifer, "Detecting Violations of Differential Privacy"
  (StatDP, ACM CCS 2018), incorrect variant noisy_max_v1b in
  https://github.com/cmla-psu/statdp (statdp/algorithms.py: "returning the maximum value
  instead of the index"); also a benchmark of DP-Sniper (Bichsel, Steffen, Bogunovic, Vechev,
  IEEE S&P 2021).
Claim: pure:1, records in [0, 1]^5, dimension 5, 10 records, add-remove.
True privacy loss: k*eps/2 = 2.5 for k = 5 candidates. The released value V = max_i(q_i + N_i)
  has CDF G(v) = prod_i F(v - q_i), F the Lap(2/eps) CDF. D' = D + (1, 1, 1, 1, 1) shifts every
  score by 1, so G'(v) = G(v - 1); for v below every q_i, G(v) = prod_i e^{(v - q_i) eps/2}/2
  is proportional to e^{k eps v/2}, so the densities at v differ by exactly e^{k eps/2} = e^{2.5}
  on the whole left tail {v <= min_i q_i} (probability 2^-5 ~ 3 % under D'), and by at most
  that elsewhere (each factor of the product moves by at most e^{eps/2}).
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--candidates", type=int, default=5)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    k = a.candidates
    q = [0.0] * k
    for r in req["dataset"]:
        r = r if isinstance(r, list) else [r]
        for i in range(k):
            q[i] += min(max(float(r[i] if i < len(r) else 0.0), 0.0), 1.0)
    b = 2.0 / a.epsilon
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(int(req["samples"])):
        best = -math.inf
        for qi in q:
            u = rand() - 0.5
            v = qi - b * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))
            if v > best:
                best = v
        out.append(repr(best))  # BUG: the value, not the index
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
