#!/bin/bash
# cmp54.sh A B: the 96 records (3 testers x both layers / mechanism x 10^3..10^6 x jsonl/bin x 1/2 threads) of two builds
A=$1; B=$2; D=${DATA:-/work/bench54}; same=0; diff=0
for t in hockey-stick renyi mmd; do for n in 1000 10000 100000 1000000; do for f in jsonl bin; do for layer in both mechanism; do for j in 1 2; do
  extra=""; [ $layer = mechanism ] && extra="--check mechanism"
  ra=$($A test --samples-a $D/$n.a.$f --samples-b $D/$n.b.$f --claim pure:1 --tester $t --json --no-report -q --jobs $j $extra 2>/dev/null)
  rb=$($B test --samples-a $D/$n.a.$f --samples-b $D/$n.b.$f --claim pure:1 --tester $t --json --no-report -q --jobs $j $extra 2>/dev/null)
  if [ "$ra" == "$rb" ] && [ -n "$ra" ]; then same=$((same+1)); else diff=$((diff+1)); echo "DIFF $t $n $f $layer $j"; fi
done; done; done; done; done
echo "identical $same different $diff"
