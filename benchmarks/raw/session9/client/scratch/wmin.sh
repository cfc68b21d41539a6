#!/usr/bin/env bash
# wmin.sh BIN VARIANT [N1 N2]: whole bufconn call instructions (GOGC=off), min of 3 at each N
bin=$1; v=$2; n1=${3:-4000}; n2=${4:-24000}
r() { SCRATCH_V=$v GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 nice -n 10 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" -test.run='^$' -test.bench='^BenchmarkScratchCall$' -test.benchtime="${1}x" 2>&1 | awk '/Collected/ {print $4}'; }
m() { local best=; for i in 1 2 3; do x=$(r $1); if [ -z "$best" ] || [ "$x" -lt "$best" ]; then best=$x; fi; done; echo $best; }
a=$(m $n1); b=$(m $n2)
echo "$(basename $bin) $v $(( (b - a) / (n2 - n1) ))"
