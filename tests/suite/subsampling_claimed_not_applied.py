#!/usr/bin/env python3
"""Count whose claim includes amplification by Poisson subsampling that is never applied.

Implements: the accountant states eps = ln(1 + q (e^eps0 - 1)) for Poisson sampling rate
  q = 0.1 and a base mechanism with eps0 = 1 (a count + two-sided geometric noise,
  P(k) proportional to e^{-eps0 |k|}); but the data loader passes every record (the sampling
  step is skipped), so the count of ALL records is released.
Source: amplification by subsampling (Balle, Barthe, Gaboardi, "Privacy Amplification by
  Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018) claimed for a
  pipeline whose batches do not follow the analysed sampling: the gap studied by Chua, Ghazi,
  Kamath, Kumar, Manurangsi, Sinha, Zhang, "How Private are DP-SGD Implementations?" (ICML
  2024) and Lebeda, Regehr, Sivakumar, Steinke, "Avoiding Pitfalls for Privacy Accounting of
  Subsampled Mechanisms under Composition" (2024); this program is the extreme case, no
  sampling at all.
Claim: pure:0.158565 (= ln(1 + 0.1 (e - 1))), records in [0, 1], dimension 1, 50 records,
  add-remove.
True privacy loss: eps0 = 1 exactly (the geometric mechanism on a count, sensitivity 1:
  P(k)/P(k + 1) = e on every output k >= |D| + 1), 6.3 times the claim.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--sampling-rate", type=float, default=0.1)  # used by the accountant only
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    count = len(req["dataset"])  # BUG: no Poisson(q) subsampling of the records
    log_alpha = -a.epsilon
    rand, log, floor = rng.random, math.log, math.floor
    out = []
    for _ in range(int(req["samples"])):
        g1 = int(floor(log(1.0 - rand()) / log_alpha))
        g2 = int(floor(log(1.0 - rand()) / log_alpha))
        out.append(str(count + g1 - g2))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
