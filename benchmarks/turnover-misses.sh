#!/usr/bin/env bash
# turnover-misses.sh counts the instructions and the data cache misses of
# one step of admission's BenchmarkTurnover (a release, the same key's next
# request, the admission of the best queued job: the peer harness's
# BenchmarkKeys without its goroutines) with callgrind's cache simulator,
# set as dispatch-misses.sh is to this host's L1d (48 KiB) and L2 (2 MiB,
# the "LL" level): the L2 misses are the accesses that go to the L3 or to
# memory.
# Usage, from the repository root (needs valgrind):
#   bash benchmarks/turnover-misses.sh [admission test binary] [keys...]
# Keys default to 10 and 10000.
#
# A count is the difference of a run of 20000 and one of 60000 timed steps,
# divided by 40000, so the set-up cancels. The goroutine hand-off that
# every admission of the harness also pays (waking a cold goroutine) is not
# in it; see dispatch-misses.sh for what the simulator does not model.
set -euo pipefail

bin=${1:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/admission.test
	go test -c -o "$bin" ./admission/
fi
shift || true
keys=("$@")
[ ${#keys[@]} -gt 0 ] || keys=(10 10000)

# run KEYS N: "instructions LL-read-misses LL-write-misses".
run() {
	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 --I1=32768,8,64 \
		--callgrind-out-file=/dev/null --toggle-collect='*turnoverBench*step*' \
		"$bin" -test.run='^$' -test.bench="^BenchmarkTurnover\$/^keys=$1\$" \
		-test.benchtime="$2x" 2>&1 |
		awk '/Collected/ {i=$4} /LL misses/ {gsub(",", ""); r=$6; w=$9} END {print i, r, w}'
}

printf '%8s %22s %10s\n' keys "misses/step (rd + wr)" instr/step
for k in "${keys[@]}"; do
	read -r i1 r1 w1 < <(run "$k" 20000)
	read -r i2 r2 w2 < <(run "$k" 60000)
	awk -v k="$k" -v i1="$i1" -v r1="$r1" -v w1="$w1" -v i2="$i2" -v r2="$r2" -v w2="$w2" 'BEGIN {
		n = 40000; r = (r2 - r1) / n; w = (w2 - w1) / n
		printf "%8d %9.1f (%4.1f + %4.1f) %10.0f\n", k, r + w, r, w, (i2 - i1) / n }'
done
