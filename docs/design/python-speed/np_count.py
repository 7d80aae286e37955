"""A numpy Laplace count speaking the exec protocol (docs/python.md, "Speed")."""
import json, sys
import numpy as np
req = json.load(sys.stdin)
rng = np.random.default_rng(req["seed"])
out = len(req["dataset"]) + rng.laplace(0.0, 1.0, size=req["samples"])
sys.stdout.write("\n".join(repr(float(x)) for x in out) + "\n")
