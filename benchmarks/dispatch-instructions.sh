#!/usr/bin/env bash
# dispatch-instructions.sh counts the instructions of one step of
# admission's BenchmarkDispatch (a release that admits one queued job, and
# the arrival that replaces it) with callgrind, for every variant at 100
# queued jobs over 10 keys and 100,000 over 10,000 keys, and for the naive
# O(n) baseline.
#
# Instruction counts do not depend on the cache or on the other processes
# of a shared machine: where ns/op grows with the queue because the state a
# step touches no longer fits in the cache, instructions per step grow only
# with the work the algorithm does (a scan grows with the queue, a heap
# operation with its logarithm). See ADMISSION.md, "Session 5".
#
# Each count is the difference of two runs of -test.benchtime=N1x and N2x
# (each the median of three) divided by N2-N1, so the set-up, warm-up and
# sampling steps, which are the same in both runs, cancel. Only calls inside (*dispatchBench).step (or
# (*naiveSched).step) are counted. Go's asynchronous preemption signals are
# turned off, which callgrind cannot follow, and so is the GC.
#
# Usage, from the repository root (needs valgrind: apt-get install valgrind):
#   bash benchmarks/dispatch-instructions.sh [admission test binary]
# About 8 minutes.
set -euo pipefail

bin=${1:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/admission.test
	go test -c -o "$bin" ./admission/
fi

# count FUNC BENCH N: instructions collected inside FUNC over a run of BENCH
# with N timed iterations.
count() {
	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--callgrind-out-file=/dev/null --toggle-collect="$1" \
		"$bin" -test.run='^$' -test.bench="$2" -test.benchtime="$3x" 2>&1 |
		awk '/Collected/ {print $4}'
}

# median3 FUNC BENCH N: the median count of three runs. Now and then one
# run counts tens of millions of instructions more or fewer than the
# others (callgrind losing track of the toggled function across a
# goroutine stack switch, it seems); the median of three drops it.
median3() {
	{ count "$@"; count "$@"; count "$@"; } | sort -n | sed -n 2p
}

# perstep FUNC BENCH N1 N2: instructions per timed iteration.
perstep() {
	local a b
	a=$(median3 "$1" "$2" "$3")
	b=$(median3 "$1" "$2" "$4")
	echo $(((b - a) / ($4 - $3)))
}

printf '%-10s %14s %17s %7s\n' variant "100 / 10" "100,000 / 10,000" growth
for v in plain aging conflicts mixed; do
	small=$(perstep '*dispatchBench*step*' "^BenchmarkDispatch\$/impl=fairseat/variant=$v\$/queued=100\$/keys=10\$" 20000 60000)
	large=$(perstep '*dispatchBench*step*' "^BenchmarkDispatch\$/impl=fairseat/variant=$v\$/queued=100000\$/keys=10000\$" 20000 60000)
	printf '%-10s %14d %17d %6.2fx\n' "$v" "$small" "$large" "$(awk -v a="$large" -v b="$small" 'BEGIN { print a / b }')"
done
small=$(perstep '*naiveSched*step*' '^BenchmarkDispatch$/impl=naive/variant=plain$/queued=100$/keys=10$' 2000 6000)
large=$(perstep '*naiveSched*step*' '^BenchmarkDispatch$/impl=naive/variant=plain$/queued=100000$/keys=10000$' 100 300)
printf '%-10s %14d %17d %6.0fx\n' naive "$small" "$large" "$(awk -v a="$large" -v b="$small" 'BEGIN { print a / b }')"
