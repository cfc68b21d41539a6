package simserver

import (
	"context"
	"math"
	"math/rand/v2"
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

// TestThrash: past C a thrashing server's jobs take longer still, so that
// the jobs running do less than C in all; up to C nothing changes.
func TestThrash(t *testing.T) {
	for _, tc := range []struct {
		running int
		a       float64
		want    time.Duration // for a base of 1s and C = 4
	}{
		{4, 0.5, time.Second},               // at C: base time
		{8, 0, 2 * time.Second},             // no thrashing: running/C
		{8, 0.5, 3 * time.Second},           // 2 × (1 + 0.5·1)
		{12, 0.25, 4500 * time.Millisecond}, // 3 × (1 + 0.25·2)
	} {
		d := SeatTime(time.Second, tc.running, 4, tc.a)
		if d != tc.want {
			t.Errorf("%d running, thrash %v: %v, want %v", tc.running, tc.a, d, tc.want)
		}
		// The work the running jobs do per second, in seats: below C once
		// they thrash.
		if work := float64(tc.running) * float64(time.Second) / float64(d); tc.a > 0 && tc.running > 4 && work >= 4 {
			t.Errorf("%d running, thrash %v: %.2f seats of work, want less than C", tc.running, tc.a, work)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		v := New(1)
		v.SetThrash(1)
		var wg sync.WaitGroup
		var second time.Duration
		wg.Go(func() { v.Serve(time.Second) })
		synctest.Wait()
		wg.Go(func() { second = v.Serve(time.Second) })
		wg.Wait()
		if second != 4*time.Second { // 2 × (1 + 1·1)
			t.Errorf("a second job on a server of C = 1 thrashing by 1: %v, want 4s", second)
		}
	})
}

// TestSpread: the factor's mean is 1 and its log's standard deviation is
// sigma (over 100,000 draws); sigma 0 is no spread at all.
func TestSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if f := Spread(rng, 0); f != 1 {
		t.Fatalf("Spread(0) = %v, want 1", f)
	}
	const n, sigma = 100_000, 0.5
	var sum, sumLog, sumLog2 float64
	for range n {
		f := Spread(rng, sigma)
		sum += f
		sumLog += math.Log(f)
		sumLog2 += math.Log(f) * math.Log(f)
	}
	mean := sum / n
	sd := math.Sqrt(sumLog2/n - (sumLog/n)*(sumLog/n))
	if math.Abs(mean-1) > 0.01 || math.Abs(sd-sigma) > 0.01 {
		t.Errorf("mean %.4f (want 1), log's standard deviation %.4f (want %v)", mean, sd, sigma)
	}
}

// TestWork: Work is the base time done, counted as the jobs run, on both
// kinds of server: three jobs of 1s on C = 2 do 3s of work in all, at
// 2 seats a second while all three run (on a server of New the third, at
// 1.5s, runs slower than the others; on a shared one all three do).
func TestWork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      func() *Server
		at     time.Duration
		before time.Duration // done at `at`
	}{
		{"New", func() *Server { return New(2) }, 900 * time.Millisecond, 2400 * time.Millisecond}, // 0.9 × (1 + 1 + 2/3)
		{"NewShared", func() *Server { return NewShared(2) }, 900 * time.Millisecond, 1800 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v := tc.v()
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() { v.Serve(time.Second) })
				}
				time.Sleep(tc.at)
				if w := v.Work(); w != tc.before {
					t.Errorf("work after %v: %v, want %v", tc.at, w, tc.before)
				}
				wg.Wait()
				if w := v.Work(); w != 3*time.Second {
					t.Errorf("work after all three: %v, want 3s", w)
				}
				time.Sleep(time.Second)
				if w := v.Work(); w != 3*time.Second {
					t.Errorf("work after a second idle: %v, want 3s", w)
				}
			})
		})
	}
}

// TestWorkOfNoTime: a job of no base time does no work and takes no time,
// on both kinds of server.
func TestWorkOfNoTime(t *testing.T) {
	for _, v := range []func() *Server{func() *Server { return New(1) }, func() *Server { return NewShared(1) }} {
		synctest.Test(t, func(t *testing.T) {
			s := v()
			if d := s.Serve(0); d != 0 {
				t.Errorf("a job of no time took %v", d)
			}
			if d := s.Serve(time.Second); d != time.Second {
				t.Errorf("a job of 1s alone took %v", d)
			}
			if w := s.Work(); w != time.Second {
				t.Errorf("work %v, want 1s", w)
			}
		})
	}
}
