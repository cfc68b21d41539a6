#!/usr/bin/env bash
# harness-misses.sh BIN REGEX [N1 N2]: instructions and simulated cache
# misses per admission of a peer-harness benchmark (BenchmarkKeys with its
# goroutines), under callgrind's cache simulator set as cachesim.sh sets it
# (this host's L1d and 2 MiB L2), GOMAXPROCS=1, GC off. Counts the whole
# process; the per-admission figure is the difference of a run of N2 and
# one of N1 admissions divided by N2-N1, so the set-up (the goroutines, the
# keys' first admissions) cancels. Load-independent, unlike the wall clock.
set -euo pipefail
bin=$1 re=$2 n1=${3:-20000} n2=${4:-60000}
run() {
	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 --I1=32768,8,64 \
		--callgrind-out-file=/dev/null \
		"$bin" -test.run='^$' -test.bench="$re" -test.benchtime="$1x" 2>&1 |
		awk '/Collected/ {i=$4} /LL misses/ {gsub(",", ""); r=$6; w=$9} END {print i, r, w}'
}
read -r i1 r1 w1 < <(run "$n1")
read -r i2 r2 w2 < <(run "$n2")
awk -v i1="$i1" -v r1="$r1" -v w1="$w1" -v i2="$i2" -v r2="$r2" -v w2="$w2" -v n=$((n2 - n1)) 'BEGIN {
	printf "misses/admission %6.1f (%5.1f rd + %5.1f wr)  instructions/admission %7.0f\n", (r2-r1+w2-w1)/n, (r2-r1)/n, (w2-w1)/n, (i2-i1)/n }'
