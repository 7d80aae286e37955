# Counterexample check: exchangeable-but-correlated "confidence level" mechanism, exactly mu-GDP per canary.
# With prob p ("strong world") all n canaries draw their |LLR| level from the top-p slice of the mu-Gaussian
# privacy-loss distribution; otherwise from the rest. Per canary the level law is the Gaussian PLD, so the
# pair is exactly G_mu; only the coupling across canaries differs from the product model.
import math
from check import Phi, z_of_v, log_binom_cdf, logsumexp, xiang_p

def strong_world_p(mu, n, r, u, p, nodes=1501):
    a, b = r + 1.0, n - r * 1.0
    mean = a / (a + b); sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    lo, hi = max(1e-300, mean - 14 * sd), min(1 - 1e-15, mean + 14 * sd)
    h = (hi - lo) / (nodes - 1)
    lB = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    logs = []
    for j in range(nodes):
        v = lo + j * h
        vv = p * v                      # mass above the cut, measured in the Gaussian PLD
        gbar = Phi(z_of_v(vv, mu)) / vv
        wgt = 0.5 if j in (0, nodes - 1) else 1.0
        logs.append(math.log(wgt * h) + lB + (a - 1) * math.log(v) + (b - 1) * math.log1p(-v) + log_binom_cdf(u, r, gbar))
    return min(1.0, math.exp(logsumexp(logs)))

n, r, u = 10000, 1000, 97
for mu in (0.6, 0.7, 0.8, 0.9):
    prod = xiang_p(mu, n, r, u, nodes=801)
    row = [f"mu={mu}: product-model P[T<=97]={prod:.3e}"]
    for p in (0.05, 0.1, 0.2):
        row.append(f"p={p}: joint >= {p*strong_world_p(mu, n, r, u, p, nodes=801):.3f}")
    print("  ".join(row), flush=True)
