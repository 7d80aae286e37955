#!/usr/bin/env python3
"""Symmetric unary encoding (one-hot bits through randomized response), aggregated into counts;
by default every bit at the whole budget instead of half of it.

Implements: records in [0, 8) are categories (floor, clamped to 0..7); each record is one-hot
  encoded into 8 bits and every bit is kept with probability e^{eps'}/(1 + e^{eps'}) and
  flipped otherwise; the release is the number of reported ones per category (8 counts).
  Replacing a record moves its one from one bit to another: two bits change, so the symmetric
  unary encoding must use eps' = eps/2 per bit (`--correct 1`); the buggy default uses
  eps' = eps, the budget of one bit, as if a record changed one bit only.
Source: Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
  estimation" (USENIX Security 2017), symmetric unary encoding (SUE, "basic RAPPOR") with
  p = e^{eps/2}/(e^{eps/2} + 1); Erlingsson, Pihur, Korolova, RAPPOR (CCS 2014).
Claim: pure:1, records in [0, 8], dimension 1, 20 records, replace-one.
True privacy loss: default: eps = 2 (the two changed bits' counts are independent, each a
  randomized response of one record at eps' = 1 plus the others' bits; each count's likelihood
  ratio is at most e^{eps'}, reached at its extreme values, so the supremum is e^{2 eps'});
  `--correct 1`: exactly eps = 1, reached at the same extreme outputs.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--categories", type=int, default=8)
    ap.add_argument("--correct", type=int, default=0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    k = a.categories
    cats = []
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        cats.append(min(max(int(math.floor(x)), 0), k - 1))
    per_bit = a.epsilon / 2.0 if a.correct else a.epsilon  # BUG by default: two bits change
    keep = math.exp(per_bit) / (1.0 + math.exp(per_bit))
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        counts = [0] * k
        for c in cats:
            for j in range(k):
                bit = 1 if j == c else 0
                counts[j] += bit if rand() < keep else 1 - bit
        out.append("[" + ", ".join(str(v) for v in counts) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
