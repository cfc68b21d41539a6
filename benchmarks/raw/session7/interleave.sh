#!/usr/bin/env bash
# interleave.sh OUTDIR ROUNDS BENCHREGEX BENCHTIME name=binary...
# Runs each binary once per round, in turn (order alternates every round),
# appending to OUTDIR/name.txt.
set -u
out=$1; rounds=$2; re=$3; bt=$4; shift 4
mkdir -p "$out"
names=(); bins=()
for nb in "$@"; do names+=("${nb%%=*}"); bins+=("${nb#*=}"); done
n=${#names[@]}
for ((r=1; r<=rounds; r++)); do
  for ((i=0; i<n; i++)); do
    if (( r % 2 == 0 )); then k=$((n-1-i)); else k=$i; fi
    echo "# round $r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/${names[$k]}.txt"
    "${bins[$k]}" -test.run='^$' -test.bench="$re" -test.benchtime="$bt" -test.count=1 -test.benchmem >> "$out/${names[$k]}.txt" 2>&1
  done
done
