#!/bin/bash
# lvl.sh BIN NAME [ENV=...]: 150 runs per start, summarised
bin=$1; name=$2; shift 2
(for i in 1 2; do env "$@" $bin -test.run TestZZLevel -test.count=75 -test.v 2>&1 | grep LEVEL > /tmp/lv.$name.$i & done; wait)
cat /tmp/lv.$name.1 /tmp/lv.$name.2 > /tmp/lv.$name.txt
python3 /work/main/benchmarks/raw/session15/noise/level.py.txt /tmp/lv.$name.txt
