#!/usr/bin/env python3
"""A training program for `audit one-run --exec` (standard library only).

The "model" has one coordinate per canary (Dirac canaries, as in Steinke, Nasr & Jagielski 2023):
training adds the clipped gradient of every included canary (norm C = 1, along its own
coordinate) and Gaussian noise of standard deviation SIGMA to every coordinate, once. The
release is the model; the score of canary i is coordinate i of the release.

Adding or removing one canary moves one coordinate by 1, so the release is (1/SIGMA)-GDP: with
SIGMA = 2, (1.993, 1e-5)-DP (analytic Gaussian). Usage:

    audit one-run --exec 'python3 examples/exec/one_run_dirac.py 2' --claim approx:1.993:1e-5
    audit one-run --exec 'python3 examples/exec/one_run_dirac.py 0.6' --claim approx:1.993:1e-5
"""
import json
import random
import sys

sigma = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
request = json.load(sys.stdin)
rng = random.Random(request["seed"])
# Training: the included canaries' gradients, then the noise. (The data set, if any, would
# contribute to other coordinates; this model has none for it.)
model = [(1.0 if inc else 0.0) + rng.gauss(0.0, sigma) for inc in request["included"]]
# Scores from the release only: coordinate i of the model.
print("\n".join(repr(x) for x in model))
