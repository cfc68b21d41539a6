package peer

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKeys are the keys the tests use; partitioned peers get them as
// partitions.
var testKeys = []string{"a", "b", "c"}

func testConfig(capacity int) Config {
	w := make(map[string]float64, len(testKeys))
	for _, k := range testKeys {
		w[k] = 1
	}
	return Config{Capacity: capacity, Weights: w}
}

func newLimiter(t *testing.T, p Peer, c Config) Limiter {
	t.Helper()
	l, err := p.New(c)
	if err != nil {
		t.Fatalf("%s: New(%+v): %v", p.Name, c, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("%s: Close: %v", p.Name, err)
		}
	})
	return l
}

// safety bounds a test that would otherwise hang on a leaked seat: it is a
// deadline for failing, never a timing assertion.
const safety = 30 * time.Second

// TestCapacity: many goroutines over several keys never hold more seats
// than the peer allows, every Do runs fn exactly once, and afterwards all
// Capacity seats can be held at once again (none leaked).
func TestCapacity(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			const capacity, goroutines, rounds = 3, 24, 200
			c := testConfig(capacity)
			l := newLimiter(t, p, c)
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()

			var holders, most, ran atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					key := testKeys[g%len(testKeys)]
					for range rounds {
						err := l.Do(ctx, key, func() {
							n := holders.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							runtime.Gosched()
							ran.Add(1)
							holders.Add(-1)
						})
						if err != nil {
							t.Errorf("Do(%q): %v", key, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if got, want := ran.Load(), int64(goroutines*rounds); got != want {
				t.Errorf("fn ran %d times, want %d", got, want)
			}
			if got, bound := most.Load(), int64(p.Holders(c)); got > bound {
				t.Errorf("%d holders at once, want at most %d", got, bound)
			}
			if p.Holders(c) > capacity {
				t.Logf("%s lets up to %d run on %d seats by design; saw %d", p.Name, p.Holders(c), capacity, most.Load())
			}
			holdAll(t, ctx, l, capacity)
		})
	}
}

// holdAll has n requests (one per key, round robin) hold their seats at the
// same time; it fails (after safety) if fewer than n seats are free.
func holdAll(t *testing.T, ctx context.Context, l Limiter, n int) {
	t.Helper()
	var inside sync.WaitGroup
	inside.Add(n)
	all := make(chan struct{})
	go func() { inside.Wait(); close(all) }()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := l.Do(ctx, testKeys[i%len(testKeys)], func() {
				inside.Done()
				select {
				case <-all:
				case <-ctx.Done():
				}
			})
			if err != nil {
				t.Errorf("holdAll: Do: %v", err)
				inside.Done()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("could not hold %d seats at once: a seat leaked", n)
	}
}

// TestCancelWhileFull: with every seat held, a Do whose context is cancelled
// returns an error and never runs fn; once the seats are released, they are
// all free again.
func TestCancelWhileFull(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			const capacity = 2
			c := testConfig(capacity)
			l := newLimiter(t, p, c)
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()

			// Hold the seats with keys a and b: even a partitioned peer,
			// whose partitions may borrow past Capacity, then has no seat
			// for key a (its partition is at its guarantee of 1).
			held := capacity
			release := make(chan struct{})
			var inside, wg sync.WaitGroup
			inside.Add(held)
			for i := range held {
				wg.Go(func() {
					_ = l.Do(ctx, testKeys[i%len(testKeys)], func() { inside.Done(); <-release })
				})
			}
			inside.Wait()

			wctx, wcancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				errc <- l.Do(wctx, testKeys[0], func() { t.Errorf("fn ran while every seat was held") })
			}()
			wcancel()
			if err := <-errc; err == nil {
				t.Errorf("Do with a cancelled context: nil error")
			} else if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrRejected) {
				t.Errorf("Do with a cancelled context: %v", err)
			}
			close(release)
			wg.Wait()
			holdAll(t, ctx, l, capacity)
		})
	}
}

func TestOrderListsAll(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All() {
		if seen[p.Name] {
			t.Errorf("%s listed twice", p.Name)
		}
		seen[p.Name] = true
	}
	if len(seen) != len(Order) {
		t.Errorf("All() = %d peers, Order has %d", len(seen), len(Order))
	}
}
