#!/usr/bin/env bash
# ab.sh OUT ROUNDS BENCHTIME REGEX NAME=BIN...: interleaved rounds of the
# benchmarks matching REGEX, one process per binary per round, the order
# of the binaries rotating each round, under flock /tmp/bench.lock so that
# no other wall-clock run overlaps. Each binary's output goes to
# OUT/NAME.txt; benchstat compares them.
set -euo pipefail
out=$1 rounds=$2 bt=$3 re=$4
shift 4
mkdir -p "$out"
names=() bins=()
for nb in "$@"; do names+=("${nb%%=*}"); bins+=("${nb#*=}"); : >"$out/${nb%%=*}.txt"; done
n=${#names[@]}
for r in $(seq 0 $((rounds - 1))); do
	for k in $(seq 0 $((n - 1))); do
		i=$(((k + r) % n))
		dir=$(dirname "${bins[$i]}")
		flock /tmp/bench.lock "${bins[$i]}" -test.run '^$' -test.bench "$re" -test.benchtime "$bt" -test.benchmem |
			grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$out/${names[$i]}.txt"
	done
	echo "round $r done; load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
cd "$out" && benchstat $(printf '%s.txt ' "${names[@]}")
