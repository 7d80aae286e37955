"""In-process audit of a numpy Laplace count (docs/python.md, "Speed"): three timed runs."""
import time
import numpy as np
import dp_audit

def laplace_count(dataset, n, seed):
    rng = np.random.default_rng(seed)
    return len(dataset) + rng.laplace(0.0, 1.0, n)

d = [0.5] * 10
for rep in range(3):
    t = time.perf_counter()
    rec = dp_audit.audit_callable(laplace_count, "pure:1", d, d + [1.0], samples=200000, check="both")
    el = time.perf_counter() - t
    print(f"in-process: {el:.2f} s, 2x200000 releases: {400000/el:.0f} releases/s, violation={rec.violation_found}")
