import math, random, bisect as bs
from check import Phi, z_of_v, xiang_p
from counter import strong_world_p
mu, n, r, p = 0.8, 1000, 100, 0.2
# product critical value u_c at mu: largest u with product P[T<=u] < 0.05
u_c = max(u for u in range(0, 60) if xiang_p(mu, n, r, u, nodes=601) < 0.05)
print("u_c", u_c, "product P[T<=u_c]", xiang_p(mu, n, r, u_c, nodes=601))
# table of gamma(s): error prob at PLD position s (mass above), gamma = phi(z)/(phi(z)+phi(z+mu))
K = 20000
S = [(k + 0.5) / K for k in range(K)]
def gam(s):
    z = z_of_v(s, mu); a = math.exp(-z*z/2); b = math.exp(-(z+mu)**2/2); return a/(a+b)
G = [gam(s) for s in S]
rng = random.Random(1)
hits = 0; reps = 4000
for _ in range(reps):
    strong = rng.random() < p
    ss = sorted((rng.random() * p if strong else p + rng.random() * (1 - p)) for _ in range(n))[:r]
    T = sum(1 for s in ss if rng.random() < G[min(K - 1, int(s * K))])
    hits += T <= u_c
ph = hits / reps
print("joint MC P[T<=u_c] =", ph, "+-", math.sqrt(ph*(1-ph)/reps), " analytic strong-world part p*P_strong =", p*strong_world_p(mu, n, r, u_c, p, nodes=601))
