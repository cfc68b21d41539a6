#!/usr/bin/env bash
# cpu.sh N ROUNDS BIN...: CPU time (user+sys) per op of BenchmarkClientInterceptor at
# GOMAXPROCS=1, N ops per process, binaries interleaved (order alternating), under the lock.
# CPU time leaves out the time another process holds the core, which wall time does not.
n=$1; rounds=$2; shift 2
for i in $(seq $rounds); do
  order="$*"; if [ $((i % 2)) -eq 0 ]; then order=$(echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for b in $order; do
    t=$( { flock /tmp/bench.lock /usr/bin/time -f "%U %S" env GOMAXPROCS=1 ./$b -test.run='^$' -test.bench="${BENCH:-^BenchmarkClientInterceptor\$}" -test.benchtime=${n}x >/dev/null; } 2>&1 | tail -1)
    echo "$b $t" | awk -v n=$n '{printf "%s %.1f\n", $1, ($2+$3)*1e9/n}'
  done
done
