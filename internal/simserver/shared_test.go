package simserver

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestShared: on a shared server a job slows down when others join it and
// speeds up when they leave, changes of capacity and thrashing take effect
// on the jobs already running, and a cancelled job leaves its share to the
// others.
func TestShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := NewShared(1)
		start := time.Now()
		var mu sync.Mutex
		ends := map[string]time.Duration{}
		seats := map[string]time.Duration{}
		serve := func(name string, base time.Duration) {
			d := v.Serve(base)
			mu.Lock()
			ends[name], seats[name] = time.Since(start), d
			mu.Unlock()
		}
		var wg sync.WaitGroup
		// a alone for 0.5s, then a and b at half speed each: a's last 0.5s
		// takes 1s (it ends at 1.5s), then b alone does its last 0.5s.
		wg.Go(func() { serve("a", time.Second) })
		time.Sleep(500 * time.Millisecond)
		wg.Go(func() { serve("b", time.Second) })
		wg.Wait()
		want := map[string]time.Duration{"a": 1500 * time.Millisecond, "b": 2 * time.Second}
		for name, end := range want {
			if ends[name] != end {
				t.Errorf("job %s ended at %v, want %v (ends %v)", name, ends[name], end, ends)
			}
		}
		if seats["b"] != 1500*time.Millisecond {
			t.Errorf("job b's seat time %v, want 1.5s", seats["b"])
		}

		// Two jobs on C = 1, the capacity doubled after 1s: each did 0.5s
		// of its 2s, then runs at full speed for the other 1.5s.
		start = time.Now()
		wg.Go(func() { serve("c", 2*time.Second) })
		wg.Go(func() { serve("d", 2*time.Second) })
		time.Sleep(time.Second)
		v.SetCapacity(2)
		wg.Wait()
		for _, name := range []string{"c", "d"} {
			if ends[name] != 2500*time.Millisecond {
				t.Errorf("job %s ended at %v after the capacity doubled at 1s, want 2.5s", name, ends[name])
			}
		}

		// Thrashing (a = 1) with two jobs on C = 1: each at a quarter of
		// full speed; the thrash taken away after 1s, half speed.
		v.SetCapacity(1)
		v.SetThrash(1)
		start = time.Now()
		wg.Go(func() { serve("e", time.Second) })
		wg.Go(func() { serve("f", time.Second) })
		time.Sleep(time.Second)
		v.SetThrash(0)
		wg.Wait()
		if ends["e"] != 2500*time.Millisecond { // 0.25s done, 0.75s at half speed
			t.Errorf("job e ended at %v, want 2.5s", ends["e"])
		}

		// A cancelled job leaves: the other goes back to full speed.
		start = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		wg.Go(func() { serve("g", time.Second) })
		if d, err := v.ServeContext(ctx, time.Second); err != context.DeadlineExceeded || d != 500*time.Millisecond {
			t.Errorf("ServeContext with a 500ms deadline: %v after %v", err, d)
		}
		wg.Wait()
		if ends["g"] != 1250*time.Millisecond { // 0.25s done in the first 0.5s
			t.Errorf("job g ended at %v, want 1.25s", ends["g"])
		}
	})
}

// TestSharedSteady: at a constant number of jobs a shared server gives each
// the seat time SeatTime gives it on a server of New.
func TestSharedSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := NewShared(4)
		v.SetThrash(0.5)
		var wg sync.WaitGroup
		got := make([]time.Duration, 8)
		for i := range got {
			wg.Go(func() { got[i] = v.Serve(time.Second) })
		}
		wg.Wait()
		want := SeatTime(time.Second, 8, 4, 0.5)
		for i, d := range got {
			if d != want {
				t.Errorf("job %d of 8 started at once: %v, want %v", i, d, want)
			}
		}
	})
}
