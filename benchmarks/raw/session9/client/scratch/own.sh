#!/usr/bin/env bash
# own.sh BIN...: the interceptor's own instructions per call (callgrind, GOGC=off):
# (min of 3 runs of 300k - min of 3 runs of 100k) / 200k. Extra work that lands
# inside the interceptor now and then (a runtime goroutine scheduled there) only adds,
# so the minimum is the estimate.
r() { GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 nice -n 10 valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*interceptors.(*client).unary' ./$1 -test.run='^$' -test.bench='^BenchmarkClientInterceptor$' -test.benchtime=$2x 2>&1 | awk '/Collected/ {print $4}'; }
m() { local best=; for i in 1 2 3; do v=$(r $1 $2); if [ -z "$best" ] || [ "$v" -lt "$best" ]; then best=$v; fi; done; echo $best; }
for b in "$@"; do
  a=$(m $b 100000); c=$(m $b 300000)
  echo "$b $(( (c - a) / 200000 ))"
done
