package simserver

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestServe: up to C jobs take their base time; past C each takes longer
// in proportion to the jobs running at its start.
func TestServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := New(2)
		var mu sync.Mutex
		var got []time.Duration
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				d := v.Serve(time.Second)
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			})
			synctest.Wait() // in order: the i-th starts with i running
		}
		wg.Wait()
		want := []time.Duration{time.Second, time.Second, 1500 * time.Millisecond, 2 * time.Second}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("seat times %v, want %v", got, want)
			}
		}
		v.SetCapacity(4)
		if d := v.Serve(time.Second); d != time.Second || v.Capacity() != 4 {
			t.Errorf("alone after SetCapacity(4): %v (capacity %d), want 1s", d, v.Capacity())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := v.ServeContext(ctx, time.Second); err != context.DeadlineExceeded || time.Since(start) != 300*time.Millisecond {
			t.Errorf("ServeContext with a 300ms deadline: %v after %v", err, time.Since(start))
		}
	})
}
