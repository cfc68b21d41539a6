#!/usr/bin/env python3
"""ratios.py ROUNDS.TSV BASE: per case and variant, the per-round ratio
variant/BASE: median, quartiles, min-max, and the median ns/op."""
import sys, statistics as st, collections
rows = [l.split('\t') for l in open(sys.argv[1]) if l.strip()]
base = sys.argv[2]
ns = collections.defaultdict(dict)  # (case, round) -> variant -> ns
for r, case, v, x, load in rows:
    ns[(case, r)][v] = float(x)
cases = sorted({c for c, _ in ns}, key=lambda c: list(dict.fromkeys(c2 for c2, _ in ns)).index(c))
variants = sorted({v for d in ns.values() for v in d})
print(f'{"case":18} {"variant":10} {"n":>3} {"median ns":>10} {"ratio med":>9} {"q1":>6} {"q3":>6} {"min":>6} {"max":>6}')
for c in cases:
    for v in variants:
        rs = [d[v] / d[base] for (cc, r), d in ns.items() if cc == c and v in d and base in d]
        xs = [d[v] for (cc, r), d in ns.items() if cc == c and v in d]
        if not rs: continue
        q = st.quantiles(rs, n=4) if len(rs) >= 2 else [rs[0]] * 3
        print(f'{c:18} {v:10} {len(rs):3} {st.median(xs):10.1f} {st.median(rs):9.3f} {q[0]:6.3f} {q[2]:6.3f} {min(rs):6.3f} {max(rs):6.3f}')
