import math
from check import xiang_p, eps_of_mu, bisect, log_binom_cdf, Phi, mahloujifar_rejects
def xp(mu, n, r, u, nodes=601):
    if r == n: return math.exp(log_binom_cdf(u, n, Phi(-mu/2)))
    return xiang_p(mu, n, r, u, nodes)
for (n, r, u, want) in [(1000, 100, 10, 3.1645), (10000, 10000, 3085, 4.1592), (1000, 250, 36, 3.6327), (10000, 2500, 364, 4.1371)]:
    mu = bisect(lambda t: xp(t, n, r, u) < 0.05, 0.01, 8.0, 30)
    mm = bisect(lambda t: mahloujifar_rejects(t, n, r, r - u, 0.05), 0.01, 8.0, 40)
    print(n, r, u, "xiang mu", round(mu, 5), "eps", round(eps_of_mu(mu, 1e-5), 4), "repo", want, "| mahloujifar mu", round(mm, 5), "eps", round(eps_of_mu(mm, 1e-5), 4), flush=True)
