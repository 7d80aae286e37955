#!/usr/bin/env python3
"""DP-SGD logistic regression, full batch, that starts from the request's initial model and releases only its final model's scores, speaking the exec protocol.

Each record is [x_1, ..., x_f, y]: f features and a label (class 1 when y > 0, else class 0).
Training: T steps of full-batch DP-SGD from theta_0 = the request's "initial_model" (zeros when
absent): per-example gradients (sigma(theta.x) - label) * x clipped to L2 norm C, summed, plus
Gaussian noise N(0, (z C)^2) per coordinate, and the step theta -= lr * (sum + noise) / N with a
fixed N (--norm-size, so the step does not depend on the dataset's size). Under add/remove
neighbours each step is a Gaussian mechanism of sensitivity C and noise z C, so the T steps are
mu-GDP with mu = sqrt(T) / z for EVERY theta_0 (the guarantee is for all initial models), and so is
any function of the final model.

The release of one run is the final model seen through the request's "queries" (records of the
same form): per query, the signed margin (2 label - 1) * theta_T.x, one line per run (a JSON number
for one query, an array for several). That is black-box access to the final model.

    audit final-model --exec 'python3 examples/exec/final_model_logreg.py' --claim gdp:0.5 \
        --data examples/exec/final_model_data.jsonl --record-range -1:1 --initial-model zero

--noise-factor F multiplies the noise (F = 0.5: the bug "noise halved", true mu = 2 sqrt(T)/z).
--ignore-initial-model trains from zeros whatever the request says (a program the audit must
notice: its final model does not depend on the initial model it was sent).
"""
import argparse
import json
import math
import random
import sys


def sigmoid(t):
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def train(records, theta0, a, rng):
    f = len(theta0)
    theta = list(theta0)
    xs = [(r[:f], 1.0 if r[f] > 0 else 0.0) for r in records]
    sd = a.noise * a.noise_factor * a.clip
    for _ in range(a.steps):
        total = [0.0] * f
        for x, label in xs:
            m = sum(t * v for t, v in zip(theta, x))
            c = sigmoid(m) - label
            g = [c * v for v in x]
            norm = math.sqrt(sum(v * v for v in g))
            s = min(1.0, a.clip / norm) if norm > 0 else 1.0
            for j in range(f):
                total[j] += s * g[j]
        for j in range(f):
            theta[j] -= a.lr * (total[j] + rng.gauss(0.0, sd)) / a.norm_size
    return theta


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--noise", type=float, default=10.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--norm-size", type=float, default=100.0)
    ap.add_argument("--noise-factor", type=float, default=1.0)
    ap.add_argument("--ignore-initial-model", action="store_true")
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    records = [r if isinstance(r, list) else [r] for r in req["dataset"]]
    dim = len(records[0]) if records else len(req.get("queries", [[0.0, 0.0]])[0])
    f = dim - 1
    if f < 1:
        sys.exit("records must be [x_1, ..., x_f, y] with f >= 1 features")
    theta0 = req.get("initial_model") or [0.0] * f
    if len(theta0) != f:
        sys.exit(f"initial_model has {len(theta0)} values; the records have {f} features")
    if a.ignore_initial_model:
        theta0 = [0.0] * f
    queries = req.get("queries") or [[1.0] * f + [1.0]]
    out = []
    for _ in range(req["samples"]):
        theta = train(records, theta0, a, rng)
        scores = []
        for q in queries:
            sign = 1.0 if q[f] > 0 else -1.0
            scores.append(sign * sum(t * v for t, v in zip(theta, q[:f])))
        out.append(json.dumps(scores[0] if len(scores) == 1 else scores))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
