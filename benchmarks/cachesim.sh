# cachesim.sh is sourced by dispatch-misses.sh and turnover-misses.sh: one
# callgrind run with the cache simulator set to this host's L1d (48 KiB,
# 12-way) and L2 (2 MiB, 16-way, the "LL" level: its misses are the
# accesses that go to the L3 or to memory), and the per-step difference of
# two such runs.

# cachesim BIN TOGGLE BENCH N: runs benchmark BENCH of test binary BIN for
# N iterations, counting inside functions matching TOGGLE only, and prints
# "instructions LL-read-misses LL-write-misses".
cachesim() {
	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 --I1=32768,8,64 \
		--callgrind-out-file=/dev/null --toggle-collect="$2" \
		"$1" -test.run='^$' -test.bench="$3" -test.benchtime="$4x" 2>&1 |
		awk '/Collected/ {i=$4} /LL misses/ {gsub(",", ""); r=$6; w=$9} END {print i, r, w}'
}

# perstep BIN TOGGLE BENCH: the counts of one step, the difference of a
# run of 20000 steps and one of 60000 divided by 40000, so that the set-up
# cancels: "misses read+write, read, write, instructions".
perstep() {
	local i1 r1 w1 i2 r2 w2
	read -r i1 r1 w1 < <(cachesim "$1" "$2" "$3" 20000)
	read -r i2 r2 w2 < <(cachesim "$1" "$2" "$3" 60000)
	awk -v i1="$i1" -v r1="$r1" -v w1="$w1" -v i2="$i2" -v r2="$r2" -v w2="$w2" 'BEGIN {
		n = 40000; r = (r2 - r1) / n; w = (w2 - w1) / n
		printf "%9.1f (%4.1f + %4.1f) %10.0f\n", r + w, r, w, (i2 - i1) / n }'
}
