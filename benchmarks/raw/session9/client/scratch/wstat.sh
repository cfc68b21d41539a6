#!/usr/bin/env bash
# wstat.sh BIN VARIANT: instructions per whole bufconn call (callgrind, GOGC=off,
# GOMAXPROCS=1): each of 8 runs of 24,000 calls, less the mean of 3 runs of 4,000, over 20,000.
bin=$1; v=$2
r() { GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 nice -n 10 valgrind --tool=callgrind --callgrind-out-file=/dev/null ./$bin -test.run='^$' -test.bench="^BenchmarkUnaryClient\$/^net=bufconn\$/^client=$v\$" -test.benchtime=$1x 2>&1 | awk '/Collected/ {print $4}'; }
a=0; for i in 1 2 3; do a=$((a + $(r 4000))); done; a=$((a / 3))
for i in 1 2 3 4 5 6 7 8; do echo "$bin $v $(( ($(r 24000) - a) / 20000 ))"; done
