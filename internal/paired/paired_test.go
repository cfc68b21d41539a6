package paired

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var h latencies
	for _, d := range []time.Duration{5, 15, 25, 35, 1 << 40} {
		h.add(d)
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0.2, 0}, {0.4, 10}, {0.5, 20}, {0.8, 30}, {1, 199990}} {
		if got := h.quantile(tc.q, 5); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// Loop times every call, and the slower call reads slower.
func BenchmarkLoop(b *testing.B) {
	calls := []func(){func() {}, func() { time.Sleep(time.Microsecond) }}
	mean, median := Loop(b, calls)
	if median[1] <= median[0] || mean[1] <= mean[0] {
		b.Errorf("a sleeping call read as fast: mean %v, median %v", mean, median)
	}
}
