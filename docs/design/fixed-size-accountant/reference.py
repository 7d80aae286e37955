import dp_accounting as dpa, time
from dp_accounting import pld, rdp
NR = dpa.NeighboringRelation
cases=[(0.25,1.0,4,8,2),(0.01,1.0,1000,1000,10),(0.25,1.0,1,8,2),(1.0,2.0,4,8,8)]
for q,z,T,n,B in cases:
    d=1e-5
    a=pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE)
    a.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z/2)), T)
    e_pld=a.get_epsilon(d)
    r=rdp.RdpAccountant(orders=[1+x/10 for x in range(1,100)]+list(range(12,257)), neighboring_relation=NR.REPLACE_ONE)
    r.compose(dpa.SampledWithoutReplacementDpEvent(n,B,dpa.GaussianDpEvent(z/2)),T)
    e_rdp=r.get_epsilon(d)
    print(f"q={q} z={z} T={T} n={n} B={B}: dp_accounting PLD add/remove at z/2 (lower-bound pair, pessimistic) {e_pld:.6f}; RDP WOR replace-one {e_rdp:.6f}")
