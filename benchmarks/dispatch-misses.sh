#!/usr/bin/env bash
# dispatch-misses.sh counts the data cache misses of one step of
# admission's BenchmarkDispatch with callgrind's cache simulator, set to
# this host's L1d (48 KiB, 12-way) and L2 (2 MiB, 16-way, the "LL" level
# below): the L2 misses are the accesses that go to the L3 or to memory.
# Usage, from the repository root (needs valgrind):
#   bash benchmarks/dispatch-misses.sh [admission test binary] [variant...]
# Variants default to plain and mixed; about 30 seconds each.
#
# As in dispatch-instructions.sh, a count is the difference of a run of
# 20000 and one of 60000 timed steps, divided by 40000, so the set-up and
# the untimed sampling cancel. The simulator has no prefetchers and runs
# one instruction at a time: it counts misses, not what they cost, which
# on real hardware depends on how many overlap and on the other tenants
# of the L3. Use it to find misses; judge changes by time (ADMISSION.md).
set -euo pipefail

bin=${1:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/admission.test
	go test -c -o "$bin" ./admission/
fi
shift || true
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(plain mixed)

# run VARIANT QUEUED N: "instructions LL-read-misses LL-write-misses".
run() {
	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 --I1=32768,8,64 \
		--callgrind-out-file=/dev/null --toggle-collect='*dispatchBench*step*' \
		"$bin" -test.run='^$' -test.bench="^BenchmarkDispatch\$/impl=fairseat/variant=$1\$/queued=$2\$/" \
		-test.benchtime="$3x" 2>&1 |
		awk '/Collected/ {i=$4} /LL misses/ {gsub(",", ""); r=$6; w=$9} END {print i, r, w}'
}

printf '%-10s %8s %22s %10s\n' variant queued "misses/step (rd + wr)" instr/step
for v in "${variants[@]}"; do
	for q in 100 100000; do
		read -r i1 r1 w1 < <(run "$v" "$q" 20000)
		read -r i2 r2 w2 < <(run "$v" "$q" 60000)
		awk -v v="$v" -v q="$q" -v i1="$i1" -v r1="$r1" -v w1="$w1" -v i2="$i2" -v r2="$r2" -v w2="$w2" 'BEGIN {
			n = 40000; r = (r2 - r1) / n; w = (w2 - w1) / n
			printf "%-10s %8d %9.1f (%4.1f + %4.1f) %10.0f\n", v, q, r + w, r, w, (i2 - i1) / n }'
	done
done
