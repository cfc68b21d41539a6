package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fairseat/fairseat/benchmarks/peer"
)

// SaturatedCapacity is the number of seats in the saturated and key-growth
// benchmarks.
const SaturatedCapacity = 4

// SaturatedGoroutines are the goroutine counts of the saturated benchmark.
var SaturatedGoroutines = []int{4, 16, 64}

// saturatedKeys is the number of fairness keys the saturated goroutines
// share (goroutine g uses key g mod saturatedKeys).
const saturatedKeys = 16

// KeyCounts are the active-key counts of the key-growth benchmark.
var KeyCounts = []int{10, 100, 1000, 10_000}

// Contends reports whether p takes part in the contended benchmarks
// (saturated, key growth). A partitioned peer does not: every partition is
// guaranteed at least one seat and may take it past the limit, so with
// more keys than seats it runs more than Capacity requests at once and its
// throughput would not be comparable.
func Contends(p peer.Peer) bool { return !p.Partitioned }

func keyName(i int) string { return fmt.Sprintf("k%d", i) }

func mustNew(b *testing.B, p peer.Peer, c peer.Config) peer.Limiter {
	b.Helper()
	l, err := p.New(c)
	if err != nil {
		b.Fatalf("%s: %v", p.Name, err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

func noop() {}

// Uncontended measures one goroutine's Do with a no-op fn and a free seat
// (capacity 4, one key).
func Uncontended(b *testing.B, p peer.Peer) {
	l := mustNew(b, p, peer.Config{Capacity: 4, Weights: map[string]float64{"k0": 1}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Do(ctx, "k0", noop); err != nil {
			b.Fatal(err)
		}
	}
}

// Saturated measures goroutines goroutines doing Do with a no-op fn on
// SaturatedCapacity seats, over 16 keys, and reports admissions/s.
func Saturated(b *testing.B, p peer.Peer, goroutines int) {
	l := mustNew(b, p, peer.Config{Capacity: SaturatedCapacity})
	contend(b, l, goroutines, func(g int) string { return keyName(g % saturatedKeys) })
}

// Keys measures keys goroutines, each with its own fairness key, doing Do
// with a no-op fn on SaturatedCapacity seats: each admission is a dispatch
// among about keys active keys (keys − 4 of them queued). Reports
// admissions/s; ns/op is the per-admission cost.
func Keys(b *testing.B, p peer.Peer, keys int) {
	l := mustNew(b, p, peer.Config{Capacity: SaturatedCapacity})
	contend(b, l, keys, keyName)
}

// contend runs goroutines goroutines that together perform b.N Do calls,
// each drawing the next operation from a shared counter so that all of
// them stay active until the end. They are started, each does one Do of
// its own (the warm-up), and they park on a barrier before the timer
// starts.
//
// The warm-up keeps what happens once per key out of the timed calls: a
// limiter that keeps per-key state makes it at a key's first request, and
// a goroutine's first run is colder than its later ones. Without it, the
// share of first requests among the timed ones depends on b.N (with 10,000
// keys and a 300 ms round, about one timed admission in ten was a key's
// first), so ns/op moved with -benchtime; with it, every timed Do is one of
// the steady state that "N active keys" describes. Every peer gets the
// same warm-up.
func contend(b *testing.B, l peer.Limiter, goroutines int, key func(g int) string) {
	ctx := context.Background()
	var left atomic.Int64
	left.Store(int64(b.N))
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, goroutines)
	for g := range goroutines {
		k := key(g)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			err := l.Do(ctx, k, noop) // the warm-up
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			<-start
			for left.Add(-1) >= 0 {
				if err := l.Do(ctx, k, noop); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	ready.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}
