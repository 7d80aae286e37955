#!/bin/bash
O=/work/m111
A=/work/audit-s11i; B=/work/audit-s10r
$A bench floor --dir /work/bench54 --samples 1000,10000,100000,1000000 --repeats 9 --profile 1000000 > $O/floor-after.md 2>&1
$A bench floor --dir /work/bench54 --samples 1000,10000,100000,1000000 --repeats 9 --profile none --audit $B > $O/floor-before.md 2>&1
$A bench floor --dir /work/bench54 --samples 10000000 --repeats 3 --profile 10000000 > $O/floor-after-1e7.md 2>&1
$A bench floor --dir /work/bench54 --samples 10000000 --repeats 3 --profile none --audit $B > $O/floor-before-1e7.md 2>&1
touch $O/floor.DONE
