// Command report runs every comparison of the benchmarks module — the
// micro-benchmarks through testing.Benchmark, the fairness runs and the
// gRPC overhead — in one process, prints one table with ratios to
// fairseat, and writes RESULTS.md and results.svg.
//
// Run it from benchmarks/:
//
//	go run ./cmd/report            # full run, a few minutes
//	go run ./cmd/report -quick     # one short round, for a look
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func main() {
	testing.Init()
	quick := flag.Bool("quick", false, "one short round and short fairness runs")
	rounds := flag.Int("rounds", 5, "rounds of micro-benchmarks (median reported)")
	benchtime := flag.Duration("benchtime", 300*time.Millisecond, "time per micro-benchmark per round")
	window := flag.Duration("window", 2*time.Second, "measured window of each closed-loop fairness run")
	out := flag.String("out", ".", "directory RESULTS.md and results.svg are written to (empty: do not write)")
	benchstat := flag.String("benchstat", "benchstat.txt", "benchstat output to include in RESULTS.md, if the file exists")
	flag.Parse()
	if *quick {
		*rounds, *benchtime, *window = 1, 100*time.Millisecond, 500*time.Millisecond
	}
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		fatal(err)
	}
	progress := func(s string) { fmt.Fprintln(os.Stderr, s) }

	started := time.Now()
	m := machineInfo()
	micro := runMicro(microCases(), *rounds, progress)
	fc := fairnessConfig{work: 2 * time.Millisecond, warmup: 200 * time.Millisecond, window: *window, floodWork: time.Millisecond}
	fair, err := runFairness(fc, progress)
	if err != nil {
		fatal(err)
	}
	elapsed := time.Since(started)

	r := report{
		machine: m, micro: micro, fair: fair, rounds: *rounds, benchtime: *benchtime,
		quick: *quick, elapsed: elapsed, args: os.Args[1:],
	}
	table := r.table()
	fmt.Println(table)
	if *out == "" {
		return
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	var bs []byte
	if *benchstat != "" {
		bs, _ = os.ReadFile(filepath.Join(*out, *benchstat))
	}
	if err := os.WriteFile(filepath.Join(*out, "RESULTS.md"), []byte(r.markdown(table, string(bs))), 0o644); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "results.svg"), []byte(r.svg()), 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s in %v\n", filepath.Join(*out, "RESULTS.md"), filepath.Join(*out, "results.svg"), elapsed.Round(time.Second))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}
