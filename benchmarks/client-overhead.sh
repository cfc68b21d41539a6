#!/usr/bin/env bash
# client-overhead.sh measures what interceptors.UnaryClientInterceptor adds
# to a plain unary call over bufconn (a no-op server without interceptors),
# against the same call without a client interceptor, in the same run.
#
#  1. BenchmarkUnaryClient/net={bufconn,loopback}/client={none,fairseat}:
#     ROUNDS rounds, each variant in a process of its own, in turn (the
#     order alternating from round to round), so that a shared machine's
#     drifting load weighs on both alike; compared with benchstat -col
#     /client. loopback is TCP over 127.0.0.1, the call the goal (under 1%)
#     is stated for; bufconn, in memory, is the harsher ratio.
#  2. BenchmarkUnaryClientPaired and BenchmarkUnaryClientNoise, -count=6:
#     the clients called in turn inside one loop; mean and median per call,
#     and an A/A control (two identical clients) for the noise floor.
#  3. With valgrind installed: the instructions of one interceptor call
#     (BenchmarkClientInterceptor, callgrind, the difference of 20,000 and
#     60,000 iterations), which do not depend on the machine's load.
#
# Usage, from the repository root:
#   bash benchmarks/client-overhead.sh [ROUNDS] [OUT-DIR]
# About 4 minutes with ROUNDS=8. Needs benchstat
# (go install golang.org/x/perf/cmd/benchstat@latest).
set -euo pipefail

rounds=${1:-8}
out=${2:-$(mktemp -d)}
bin=$out/interceptors.test
go test -c -o "$bin" ./interceptors/
benchstat=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")

: >"$out/rounds.txt"
for i in $(seq "$rounds"); do
	order="none fairseat"
	if [ $((i % 2)) -eq 0 ]; then order="fairseat none"; fi
	for v in $order; do
		"$bin" -test.run='^$' -test.bench="^BenchmarkUnaryClient\$/^net=(bufconn|loopback)\$/^client=$v\$" \
			-test.benchmem -test.benchtime=1s | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$out/rounds.txt"
	done
done
echo "== $rounds rounds, interleaved processes (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
"$benchstat" -col /client "$out/rounds.txt"

"$bin" -test.run='^$' -test.bench='^BenchmarkUnaryClient(Paired|Noise)$' -test.count=6 >"$out/paired.txt"
echo "== paired in one loop, -count=6"
grep -E '^Benchmark' "$out/paired.txt"
"$benchstat" "$out/paired.txt"

if command -v valgrind >/dev/null; then
	count() {
		GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
			--callgrind-out-file=/dev/null --toggle-collect='*interceptors.(*client).unary' \
			"$bin" -test.run='^$' -test.bench='^BenchmarkClientInterceptor$' -test.benchtime="$1x" 2>&1 |
			awk '/Collected/ {print $4}'
	}
	a=$(count 20000)
	b=$(count 60000)
	echo "== instructions per interceptor call: $(((b - a) / 40000))"
fi
