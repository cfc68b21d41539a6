#!/usr/bin/env python3
"""abround.py OUT ROUNDS VARIANTS... : short interleaved rounds.

Each round, for each benchmark case, runs every variant once in a shuffled
order with a fixed iteration count, so the variants of a case are measured
within seconds of each other. Raw go-test output is appended to
OUT/<variant>.txt (benchstat input); per-round ns/op go to OUT/rounds.tsv.
"""
import os, random, re, subprocess, sys, time
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
os.makedirs(out, exist_ok=True)
# (name, binary prefix, bench regex, iterations)
cases = [c.split('|') for c in os.environ.get('CASES', '').split(';') if c] or [
    ('adm-uncontended', 'adm', '^BenchmarkUncontended$/^impl=fairseat$', '1000000x'),
    ('adm-saturated',   'adm', '^BenchmarkSaturated$/^impl=fairseat$',   '300000x'),
    ('h-uncontended',   'h',   '^BenchmarkUncontended$/^fairseat$',      '1000000x'),
    ('h-saturated64',   'h',   '^BenchmarkSaturated$/^goroutines=64$/^fairseat$', '300000x'),
    ('h-keys10',        'h',   '^BenchmarkKeys$/^keys=10$/^fairseat$',   '300000x'),
    ('h-keys10000',     'h',   '^BenchmarkKeys$/^keys=10000$/^fairseat$', '100000x'),
]
rng = random.Random(7)
pat = re.compile(r'^(Benchmark\S+)\s+\d+\s+([\d.]+) ns/op')
with open(os.path.join(out, 'rounds.tsv'), 'a') as tsv:
    for r in range(1, rounds + 1):
        for name, pre, regex, n in cases:
            order = variants[:]
            rng.shuffle(order)
            for v in order:
                load = open('/proc/loadavg').read().split()[0]
                p = subprocess.run([f'/tmp/perf/{pre}-{v}.test', '-test.run=^$', '-test.bench=' + regex,
                                    '-test.benchtime=' + n, '-test.count=1', '-test.benchmem'],
                                   capture_output=True, text=True)
                with open(os.path.join(out, v + '.txt'), 'a') as f:
                    f.write(f'# round {r} case {name} load {load}\n')
                    f.write(''.join(l + '\n' for l in p.stdout.splitlines() if l.startswith('Benchmark') or l.startswith(('goos', 'goarch', 'pkg', 'cpu'))))
                for l in p.stdout.splitlines():
                    m = pat.match(l)
                    if m:
                        tsv.write(f'{r}\t{name}\t{v}\t{m.group(2)}\t{load}\n')
                tsv.flush()
open(os.path.join(out, 'DONE'), 'w').write('done\n')
