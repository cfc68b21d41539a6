#!/usr/bin/env bash
# diffcg.sh A.out B.out N [inclusive]: per-function self (or inclusive) Ir difference per iteration, B - A
inc=${4:-no}
for f in "$1" "$2"; do
  callgrind_annotate --auto=no --inclusive=$inc --threshold=100 "$f" 2>/dev/null | awk -f "$(dirname "$0")/fn.awk" | sort -t$'\t' -k2 > "$f.fn"
done
join -t$'\t' -1 2 -2 2 -a1 -a2 -e0 -o 0,1.1,2.1 "$1.fn" "$2.fn" | awk -F'\t' -v n="$3" '{d=($3-$2)/n; if (d>3 || d<-3) printf "%9.1f %s\n", d, $1}' | sort -rn
