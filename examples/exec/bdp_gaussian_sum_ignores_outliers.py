#!/usr/bin/env python3
"""The buggy twin of bdp_gaussian_sum.py: its noise is calibrated for records up to 0.2 (the
in-distribution range of examples/bdp-data-small.txt), ignoring the outliers near 1.

The release is sum(D) + N(0, (0.2 sigma)^2): an outlier x' = 1 moves the mean by five noise
standard deviations, so the Bayesian DP claim of the correct program (bdp:1:0.0141 for that data)
does not hold: E_{x'} H_e(M(D') || M(D)) is about 0.075 (see tests/exec_bayesian.rs).

    audit run --exec 'python3 examples/exec/bdp_gaussian_sum_ignores_outliers.py' --claim bdp:1:0.0141 \\
        --data examples/bdp-data-small.txt --record-range 0:1 --dataset-size 3 --samples 20000
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdp_gaussian_sum  # noqa: E402

if __name__ == "__main__":
    bdp_gaussian_sum.main(default_bound=0.2)
