#!/usr/bin/env bash
# cpuw.sh N ROUNDS NET BIN:VARIANT...: CPU time (user+sys) per whole call of
# BenchmarkScratchCall over NET (bufconn or loopback) at GOMAXPROCS=1, N calls per
# process, entries interleaved (order alternating), under the bench lock.
n=$1; rounds=$2; net=$3; shift 3
for i in $(seq $rounds); do
  order="$*"; if [ $((i % 2)) -eq 0 ]; then order=$(echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for e in $order; do
    b=${e%%:*}; v=${e#*:}
    t=$( { flock /tmp/bench.lock /usr/bin/time -f "%U %S" env GOMAXPROCS=1 SCRATCH_V=$v SCRATCH_NET=$net ./$b -test.run='^$' -test.bench='^BenchmarkScratchCall$' -test.benchtime=${n}x >/dev/null; } 2>&1 | tail -1)
    echo "$e $t" | awk -v n=$n '{printf "%s %.0f\n", $1, ($2+$3)*1e9/n}'
  done
done
