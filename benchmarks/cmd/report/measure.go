package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fairseat/fairseat/benchmarks/harness"
	"github.com/fairseat/fairseat/benchmarks/peer"
)

// A microCase is one micro-benchmark: a group (the table row), a column
// (a peer or gRPC variant) and the function testing.Benchmark runs.
type microCase struct {
	group, column string
	fn            func(*testing.B)
}

// microResult is the median over rounds of one case.
type microResult struct {
	nsPerOp     float64
	allocsPerOp float64 // fractional: MemAllocs / N
	perSecond   float64 // admissions/s, 0 when not reported
	spread      [2]float64
}

func microCases() []microCase {
	var cs []microCase
	for _, p := range peer.All() {
		cs = append(cs, microCase{"uncontended", p.Name, func(b *testing.B) { harness.Uncontended(b, p) }})
	}
	for _, g := range harness.SaturatedGoroutines {
		for _, p := range peer.All() {
			if harness.Contends(p) {
				cs = append(cs, microCase{fmt.Sprintf("saturated g=%d", g), p.Name, func(b *testing.B) { harness.Saturated(b, p, g) }})
			}
		}
	}
	for _, n := range harness.KeyCounts {
		for _, p := range peer.All() {
			if harness.Contends(p) {
				cs = append(cs, microCase{fmt.Sprintf("keys=%d", n), p.Name, func(b *testing.B) { harness.Keys(b, p, n) }})
			}
		}
	}
	for _, v := range harness.RPCVariants() {
		cs = append(cs, microCase{"grpc", v, func(b *testing.B) { harness.UnaryRPC(b, v) }})
	}
	return cs
}

// runMicro runs every case once per round, rounds interleaved so that the
// machine's drift hits every peer alike, and returns the medians by
// group and column.
func runMicro(cs []microCase, rounds int, progress func(string)) map[[2]string]microResult {
	samples := make(map[[2]string][]testing.BenchmarkResult)
	for r := range rounds {
		for _, c := range cs {
			progress(fmt.Sprintf("round %d/%d: %s %s", r+1, rounds, c.group, c.column))
			res := testing.Benchmark(c.fn)
			if res.N == 0 {
				progress("  failed (see above)")
				continue
			}
			k := [2]string{c.group, c.column}
			samples[k] = append(samples[k], res)
		}
	}
	out := make(map[[2]string]microResult, len(samples))
	for k, rs := range samples {
		ns := make([]float64, len(rs))
		var m microResult
		allocs, rate := make([]float64, len(rs)), make([]float64, len(rs))
		for i, r := range rs {
			ns[i] = float64(r.T.Nanoseconds()) / float64(r.N)
			allocs[i] = float64(r.MemAllocs) / float64(r.N)
			rate[i] = r.Extra["admissions/s"]
		}
		m.nsPerOp = median(ns)
		m.allocsPerOp = median(allocs)
		m.perSecond = median(rate)
		m.spread = [2]float64{slices.Min(ns), slices.Max(ns)}
		out[k] = m
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// fairnessResults are the fairness runs of every peer.
type fairnessResults struct {
	three    map[string][]harness.FlowResult
	weighted map[string][]harness.FlowResult // weighted peers only
	flood    map[string]harness.FloodResult
	cfg      fairnessConfig
}

type fairnessConfig struct {
	work, warmup, window time.Duration
	floodWork            time.Duration
}

func runFairness(fc fairnessConfig, progress func(string)) (fairnessResults, error) {
	fr := fairnessResults{
		three:    map[string][]harness.FlowResult{},
		weighted: map[string][]harness.FlowResult{},
		flood:    map[string]harness.FloodResult{},
		cfg:      fc,
	}
	for _, p := range peer.All() {
		progress("fairness: three flows, " + p.Name)
		res, err := harness.ClosedLoop(p, harness.ThreeFlows(fc.work, fc.warmup, fc.window))
		if err != nil {
			return fr, err
		}
		fr.three[p.Name] = res
		if p.Weighted {
			progress("fairness: weighted pair, " + p.Name)
			res, err := harness.ClosedLoop(p, harness.WeightedPair(fc.work, fc.warmup, fc.window))
			if err != nil {
				return fr, err
			}
			fr.weighted[p.Name] = res
		}
		progress("fairness: flood, " + p.Name)
		f, err := harness.Flood(p, harness.DefaultFlood(fc.floodWork))
		if err != nil {
			return fr, err
		}
		fr.flood[p.Name] = f
	}
	return fr, nil
}
