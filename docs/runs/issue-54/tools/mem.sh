#!/bin/bash
# peak RSS (KiB) at 10^6 per side, default 2 threads, six runs each, builds interleaved
D=/work/bench54; n=1000000
for r in 1 2 3 4 5 6; do
for b in /work/audit-s10r /work/audit-s11i; do
for f in jsonl bin; do for layer in both mechanism; do
  extra=""; [ $layer = mechanism ] && extra="--check mechanism"
  /usr/bin/time -o /tmp/mt.txt -f "%M %e" $b test --samples-a $D/$n.a.$f --samples-b $D/$n.b.$f --claim pure:1 --json --no-report -q $extra > /dev/null 2>&1; m=$(tail -1 /tmp/mt.txt)
  echo "$(basename $b) hockey-stick $layer $f 10^6 peak RSS ${m% *} KB wall ${m#* } s"
done; done; done; done
