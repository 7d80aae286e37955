"""A user's numpy Laplace count with halved noise (a bug), speaking the exec protocol."""
import json
import sys

import numpy as np

req = json.load(sys.stdin)
rng = np.random.default_rng(req["seed"])
out = len(req["dataset"]) + rng.laplace(0.0, 0.5, size=req["samples"])
sys.stdout.write("\n".join(repr(float(x)) for x in out) + "\n")
