#!/usr/bin/env python3
"""Noisy counts per key, releasing only the keys present in the data (no partition selection).

Implements: records in [0, 10) are keys (floor, clamped to 0..9); for every key present in the
  data the release carries (1, count + G1 - G2) with two-sided geometric noise a = e^{-eps}
  (the integer Laplace), and for an absent key (0, 0): the key set itself is released, as a
  GROUP BY over the data does. (An adapter for a library that returns {key: noisy count} for the
  keys it saw encodes it this way: one presence flag and one value per possible key.)
Source: Korolova, Kenthapadi, Mishra, Ntoulas, "Releasing search queries and clicks privately"
  (WWW 2009) and Gopi, Gulhane, Kulkarni, Shen, Shokouhi, Yekhanin, "Differentially private set
  union" (ICML 2020): releasing the keys found in the data breaks DP; the keys must pass a noisy
  threshold (partition selection, as in Google's differential-privacy library).
Claim: pure:1, records in [0, 10], dimension 1, 30 records, add-remove.
True privacy loss: infinite. Adding a record with a key absent from D flips that key's flag
  from 0 (always, on D) to 1 (always, on D'): the outputs have disjoint supports.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--keys", type=int, default=10)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    counts = [0] * a.keys
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        counts[min(max(int(math.floor(x)), 0), a.keys - 1)] += 1
    log_alpha = -a.epsilon
    rand, log, floor = rng.random, math.log, math.floor
    out = []
    for _ in range(int(req["samples"])):
        vals = []
        for c in counts:
            g1 = int(floor(log(1.0 - rand()) / log_alpha))
            g2 = int(floor(log(1.0 - rand()) / log_alpha))
            if c > 0:  # BUG: the key set is read off the data
                vals += ["1", str(c + g1 - g2)]
            else:
                vals += ["0", "0"]
        out.append("[" + ", ".join(vals) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
