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

source "$(dirname "$0")/cachesim.sh"

printf '%8s %22s %10s\n' keys "misses/step (rd + wr)" instr/step
for k in "${keys[@]}"; do
	printf '%8d %s\n' "$k" "$(perstep "$bin" '*turnoverBench*step*' "^BenchmarkTurnover\$/^keys=$k\$")"
done
