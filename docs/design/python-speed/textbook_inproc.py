"""examples/exec/textbook_laplace_sum.py (the README's stdlib program) as a Python callable: the
same arithmetic on the same random.Random(seed) draws, so the same request gives the same
releases as the program (docs/python.md, "Speed")."""
import math
import random


def textbook_laplace_sum(dataset, n, seed, lower=-5.0, upper=5.0, epsilon=1.0):
    rng = random.Random(seed)
    total = 0.0
    for x in dataset:
        total += min(max(float(x), lower), upper)
    scale = max(abs(lower), abs(upper)) / epsilon
    out = []
    for _ in range(n):
        u = rng.random() - 0.5
        noise = -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
        out.append(total + noise)
    return out
