#!/usr/bin/env bash
# instr.sh BIN REGEX N1 N2: instructions per op (callgrind), from two runs of
# N1 and N2 iterations, so the set-up cancels: (I(N2) - I(N1)) / (N2 - N1).
bin=$1; re=$2; n1=$3; n2=$4
run() {
  GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" -test.run='^$' -test.bench="$re" -test.benchtime="${1}x" 2>&1 | awk '/Collected/ {print $4}'
}
i1=$(run $n1); i2=$(run $n2)
awk -v a="$i1" -v b="$i2" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.0f\n", (b - a) / (n2 - n1) }'
