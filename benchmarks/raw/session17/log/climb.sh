#!/bin/bash
bin=$1; shift
(for i in 1 2; do env ZZSIGMA=${ZZS:-0.5} "$@" $bin -test.run TestZZClimb -test.count=30 -test.v 2>&1 | grep CLIMB > /tmp/cl.$i & done; wait)
cat /tmp/cl.1 /tmp/cl.2 | awk '{print $2, $3}' | sort -n | awk '{r[NR]=$1; g+=$2} END {printf "climb n=%d median %.1f p10 %.1f p90 %.1f; goodput 20s mean %.2f\n", NR, r[int(NR/2)+1], r[int(NR/10)+1], r[int(NR*9/10)], g/NR}'
