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
#  3. With valgrind installed, counts that do not depend on the machine's
#     load (callgrind, GOMAXPROCS=1, GOGC=off, asynchronous preemption
#     off): the instructions of one interceptor call
#     (BenchmarkClientInterceptor, the difference of 20,000 and 60,000
#     iterations), and of one whole bufconn call, client and server, with
#     and without the interceptor (BenchmarkUnaryClient/net=bufconn, the
#     difference of 4,000 and 24,000 calls). Each count is the minimum of
#     three runs: what now and then lands in a run (a runtime goroutine
#     scheduled inside the interceptor) only adds. GC is off because where
#     its cycles fall moves a whole call's count by up to 1,000
#     instructions; the allocations, which are what it would add, are in
#     step 1.
#
# Usage, from the repository root:
#   bash benchmarks/client-overhead.sh [ROUNDS] [OUT-DIR]
# About 6 minutes with ROUNDS=8, most of it callgrind. Needs benchstat
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
	# callgrind BENCH N [ARGS]: instructions collected running BENCH for N
	# iterations; the minimum of three runs (a run that reports no count
	# fails the script).
	callgrind() {
		local best= n
		for _ in 1 2 3; do
			n=$(GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 nice -n 10 valgrind --tool=callgrind \
				--callgrind-out-file=/dev/null "${@:3}" \
				"$bin" -test.run='^$' -test.bench="$1" -test.benchtime="$2x" 2>&1 |
				awk '/Collected/ {print $4}')
			if [ -z "$n" ]; then
				echo "callgrind: no count for $1 x$2" >&2
				exit 1
			fi
			if [ -z "$best" ] || [ "$n" -lt "$best" ]; then best=$n; fi
		done
		echo "$best"
	}
	own='^BenchmarkClientInterceptor$'
	toggle=--toggle-collect='*interceptors.(*client).unary'
	a=$(callgrind "$own" 20000 "$toggle")
	b=$(callgrind "$own" 60000 "$toggle")
	echo "== instructions per interceptor call: $(((b - a) / 40000))"
	for v in none fairseat; do
		whole="^BenchmarkUnaryClient\$/^net=bufconn\$/^client=$v\$"
		a=$(callgrind "$whole" 4000)
		b=$(callgrind "$whole" 24000)
		echo "== instructions per whole bufconn call, client=$v: $(((b - a) / 20000))"
	done
fi
