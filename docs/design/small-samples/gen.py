# Usage: python3 gen.py N SEED SHIFT OUT [B]: N releases of Laplace(SHIFT, B) (default B = 1/2), rounded to multiples of 1/64.
import random, sys, math
n=int(sys.argv[1]); seed=int(sys.argv[2]); shift=float(sys.argv[3]); out=sys.argv[4]
rng=random.Random(seed)
with open(out,'w') as f:
    for _ in range(n):
        u=rng.random()-0.5
        b=float(sys.argv[5]) if len(sys.argv)>5 else 0.5
        x=shift - b*math.copysign(math.log(1-2*abs(u)),u)   # Laplace(shift, b): true eps 1/b for shift 1
        x=round(x*64)/64
        f.write(repr(x)+"\n")
