# Usage: python3 check.py N R U DELTA BETA {xiang|mahl|steinke}, e.g. 10000 1000 97 1e-5 0.05 xiang
# Independent pure-python re-derivation (not a copy of their code) of three bounds at (n,r,u).
import math, sys
from statistics import NormalDist
N = NormalDist()
Phi, Phinv = N.cdf, N.inv_cdf

def logsumexp(xs):
    m = max(xs)
    if m == -math.inf: return m
    return m + math.log(sum(math.exp(x - m) for x in xs))

def log_binom_cdf(u, r, p):
    if p <= 0: return 0.0
    if p >= 1: return 0.0 if u >= r else -math.inf
    lp, lq = math.log(p), math.log1p(-p)
    lc = math.lgamma(r + 1)
    return logsumexp([lc - math.lgamma(k + 1) - math.lgamma(r - k + 1) + k * lp + (r - k) * lq for k in range(u + 1)])

def z_of_v(v, mu):
    # solve Phi(z) + Phi(z+mu) = v  (v = mixture mass above the cut), z <= -mu/2
    lo, hi = -40.0, -mu / 2
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if Phi(mid) + Phi(mid + mu) > v: hi = mid
        else: lo = mid
    return 0.5 * (lo + hi)

def xiang_p(mu, n, r, u, nodes=1501):
    # P[T<=u] = E[BinCDF(u; r, gbar)], V = 1-W ~ Beta(r+1, n-r), gbar = alpha/V, alpha = Phi(z(V))
    a, b = r + 1.0, n - r * 1.0
    mean = a / (a + b); sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    lo, hi = max(1e-300, mean - 14 * sd), min(1 - 1e-15, mean + 14 * sd)
    h = (hi - lo) / (nodes - 1)
    lB = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    logs = []
    for j in range(nodes):
        v = lo + j * h
        gbar = Phi(z_of_v(v, mu)) / v
        wgt = 0.5 if j in (0, nodes - 1) else 1.0
        logs.append(math.log(wgt * h) + lB + (a - 1) * math.log(v) + (b - 1) * math.log1p(-v) + log_binom_cdf(u, r, gbar))
    return min(1.0, math.exp(logsumexp(logs)))

def eps_of_mu(mu, delta):
    d = lambda e: Phi(-e / mu + mu / 2) - math.exp(e) * Phi(-e / mu - mu / 2)
    lo, hi = 0.0, 100.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if d(mid) > delta: lo = mid
        else: hi = mid
    return hi

def mahloujifar_rejects(mu, m, r, v, tau):
    ginv = lambda y: Phi(Phinv(min(max(y, 1e-300), 1 - 1e-16)) - mu) if y < 1 else 1.0
    rho, hv = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(hv, ginv(rho))
        rho = min(1.0, rho + i / (r - i) * (h_new - hv))
        hv = h_new
    return rho + hv > r / m * (1 + 1e-9)

def steinke_p(eps, delta, m, r, v):
    q = 1 / (1 + math.exp(-eps))
    def sf(k):  # P[Bin(r,q) >= k]
        if k <= 0: return 1.0
        return math.exp(logsumexp([math.lgamma(r+1)-math.lgamma(j+1)-math.lgamma(r-j+1)+j*math.log(q)+(r-j)*math.log1p(-q) for j in range(k, r+1)]))
    f_v = sf(v)
    best = 0.0
    fs = {}
    for i in range(1, v + 1):
        best = max(best, (sf(v - i) - f_v) / i)
        if sf(v-i) >= 1 - 1e-15: break
    return f_v + 2 * m * delta * best

def bisect(reject, lo, hi, it=40):
    if not reject(lo): return 0.0
    for _ in range(it):
        mid = 0.5 * (lo + hi)
        if reject(mid): lo = mid
        else: hi = mid
    return lo

if __name__ == "__main__":
    n, r, u, delta, beta = [float(x) for x in sys.argv[1:6]]
    n, r, u = int(n), int(r), int(u)
    which = sys.argv[6]
    if which == "xiang":
        mu = bisect(lambda t: xiang_p(t, n, r, u) < beta, 0.01, 8.0, 30)
        print("xiang mu_hat", mu, "eps", eps_of_mu(mu, delta), "p(mu)", xiang_p(mu, n, r, u))
    elif which == "mahl":
        mu = bisect(lambda t: mahloujifar_rejects(t, n, r, r - u, beta), 0.01, 8.0, 50)
        print("mahloujifar mu_hat", mu, "eps", eps_of_mu(mu, delta))
    elif which == "steinke":
        e = bisect(lambda t: steinke_p(t, delta, n, r, r - u) < beta, 0.0, 20.0, 30)
        print("steinke eps", e)
