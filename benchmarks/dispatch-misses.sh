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

source "$(dirname "$0")/cachesim.sh"

printf '%-10s %8s %22s %10s\n' variant queued "misses/step (rd + wr)" instr/step
for v in "${variants[@]}"; do
	for q in 100 100000; do
		printf '%-10s %8d %s\n' "$v" "$q" \
			"$(perstep "$bin" '*dispatchBench*step*' "^BenchmarkDispatch\$/impl=fairseat/variant=$v\$/queued=$q\$/")"
	done
done
