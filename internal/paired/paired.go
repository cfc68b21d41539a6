// Package paired measures what a layer adds to a call whose own time
// drifts: the benchmarks of the adapters' overhead over loopback (httpmw,
// interceptors) call each variant (no layer, the layer, controls) in turn
// in one loop, rotating which goes first, so that a shared machine's
// drifting load weighs on every variant alike, and compare medians. Run
// the variants in benchmarks of their own, one after the other, and a
// drift of a few per cent between them reads as the layer's cost.
//
// It is for tests and benchmarks only.
package paired

import (
	"testing"
	"time"
)

// Loop calls each of calls in turn, once per iteration of b.Loop, the
// first call rotating from one iteration to the next, after one untimed
// call of each (to connect). It returns each one's mean and median
// latency in nanoseconds. Recording a call allocates nothing, so b's
// allocation count is the calls' own.
func Loop(b *testing.B, calls []func()) (mean, median []float64) {
	for _, call := range calls {
		call() // connect outside the timing
	}
	total := make([]time.Duration, len(calls))
	hists := make([]latencies, len(calls))
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for j := range calls {
			k := (n + j) % len(calls)
			start := time.Now()
			calls[k]()
			d := time.Since(start)
			total[k] += d
			hists[k].add(d)
		}
		n++
	}
	for i := range calls {
		mean = append(mean, float64(total[i])/float64(n))
		median = append(median, hists[i].quantile(0.5, n))
	}
	return mean, median
}

// latencies counts call latencies in 10 ns buckets up to 200 µs, the last
// bucket holding all slower calls. It has a fixed size, so recording a call
// allocates nothing in the timed loop.
type latencies [20000]int32

func (h *latencies) add(d time.Duration) { h[min(max(int(d/10), 0), len(h)-1)]++ }

// quantile returns the q-quantile of the n calls recorded, in nanoseconds
// (the lower bound of its bucket).
func (h *latencies) quantile(q float64, n int) float64 {
	c := 0
	for i, v := range h {
		if c += int(v); float64(c) >= q*float64(n) {
			return float64(i * 10)
		}
	}
	return float64(len(h) * 10)
}
