"""docs/design/python-speed/np_count.py as a Python callable (the same draws from the same
seed)."""
import numpy as np


def np_count(dataset, n, seed):
    rng = np.random.default_rng(seed)
    return len(dataset) + rng.laplace(0.0, 1.0, size=n)
