#!/bin/bash
# usage (from this folder, after cargo build --release): ./power.sh N B SEEDS OUTTAG
# Detections of audit test --claim pure:1 --check mechanism (beta = 0.05) on Laplace(0, B) against Laplace(1, B), true eps 1/B.
n=$1; b=$2; seeds=$3; tag=$4; cnt=0
cd "$(dirname "$0")"; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for s in $(seq 0 $((seeds-1))); do
  python3 gen.py $n $((2*s+1000)) 0 $tmp/a_$tag.txt $b; python3 gen.py $n $((2*s+1001)) 1 $tmp/b_$tag.txt $b
  nice ../../../target/release/audit test --samples-a $tmp/a_$tag.txt --samples-b $tmp/b_$tag.txt --claim pure:1 --check mechanism --failure-probability 0.05 --seed $s --no-report -q > /dev/null 2>&1; rc=$?
  [ $rc = 1 ] && cnt=$((cnt+1))
done
echo "n=$n b=$b caught $cnt/$seeds"
