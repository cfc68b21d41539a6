#!/usr/bin/env bash
# turnover-series.sh OUT COMMIT...: for each commit, builds admission's test
# binary from that commit's library with this checkout's bench_test.go
# (BenchmarkTurnover with seat times to the nanosecond, and
# BenchmarkTurnoverStacks), and counts instructions and simulated misses
# per step with benchmarks/cachesim.sh's perstep, at 10 and 10,000 keys.
# callgrind's counts do not depend on the machine's load. Run from the
# repository root.
set -euo pipefail
out=$1
shift
mkdir -p "$out"
root=$(pwd)
source benchmarks/cachesim.sh
wt=$(mktemp -d)
git worktree add -q --detach "$wt" HEAD
trap 'git worktree remove --force "$wt"' EXIT
for c in "$@"; do
	(cd "$wt" && git checkout -q -f --detach "$c" && cp "$root/admission/bench_test.go" admission/ &&
		go test -c -o "$out/adm-$c.test" ./admission/)
	for b in Turnover TurnoverStacks; do
		for k in 10 10000; do
			echo "$c $b keys=$k $(perstep "$out/adm-$c.test" '*turnoverBench*step*' "^Benchmark$b\$/^keys=$k\$")"
		done
	done | tee -a "$out/series.txt"
done
