// Package simserver is a simulated server for the tests of adaptive
// capacity (admission), its comparison with other limiters
// (benchmarks/adaptive) and the demo's slow disk (examples/demo): a job's seat time is base × max(1, running/C),
// running the jobs the server runs at its start (itself included) and C
// its true capacity. Past C the server does no more work, each job just
// takes longer, so the limit that keeps it busy without adding latency is
// C. It sleeps: use it under testing/synctest. Spread varies a job's base
// time as a real server's seat times vary from one job to the next, and
// SetThrash makes a server do less in all past C, as one that thrashes
// does. NewShared is a server that shares itself among the jobs running
// at every instant, not only at a job's start, so that no moment of
// running more than C jobs gets more than C seats of work out of it. Work
// is the work a server has done, counted as its jobs run.
package simserver

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Spread is a factor for a job's base time, drawn from rng: log-normal, of
// mean 1 and spread sigma (the standard deviation of its log), as a real
// server's seat times vary from one job to the next; 1 for sigma 0.
func Spread(rng *rand.Rand, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
}

// SeatTime is the seat time of a job of base time base started with
// running jobs on the server (itself included) and true capacity c: base ×
// max(1, running/c), on a server that thrashes past c by a factor a times
// 1 + a·(running/c − 1) as well. Past c the jobs running then do
// c / (1 + a·(running/c − 1)) seats of work in all, less than c and the
// less the more there are: the retrograde throughput of Gunther's
// Universal Scalability Law in its simplest form, as caches, memory or
// locks contended by more work than fits make a real server do. a = 0 is
// a server that does c and no less however many jobs it runs.
func SeatTime(base time.Duration, running, c int, a float64) time.Duration {
	if running <= c {
		return base
	}
	d := float64(base) * float64(running) / float64(c)
	return time.Duration(d * (1 + a*(float64(running)/float64(c)-1)))
}

// Server is the simulated server. It is safe for concurrent use; its zero
// value is not usable (see New).
type Server struct {
	mu      sync.Mutex
	running int     // jobs running on a server of New (a shared one counts its shares)
	c       int     // true capacity, > 0
	thrash  float64 // SeatTime's a; >= 0

	// work is the base time done by all jobs up to last, in nanoseconds;
	// speeds the base time per second the running jobs of a server of
	// New do together (each its base over its seat time).
	work   float64
	speeds float64
	last   time.Time

	// A shared server (NewShared): the jobs running and the work each
	// still has to do as of last, and the timer set for the next to end.
	shared bool
	shares map[*share]struct{}
	timer  *time.Timer
}

// New returns a server of true capacity c (> 0).
func New(c int) *Server { return &Server{c: c} }

// SetCapacity changes the true capacity (a slow disk); c > 0.
func (v *Server) SetCapacity(c int) {
	v.change(func() { v.c = c })
}

// change makes a change of the server's speed: on a shared server the
// running jobs' work is brought to now at the old speed first, and the
// next end is timed at the new one.
func (v *Server) change(f func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.shared {
		v.advanceLocked(time.Now())
	}
	f()
	if v.shared {
		v.wakeLocked()
	}
}

// SetThrash makes the server thrash past its capacity by a factor a >= 0
// (SeatTime's a); 0, the default, is a server that does C and no less
// however many jobs it runs.
func (v *Server) SetThrash(a float64) {
	v.change(func() { v.thrash = a })
}

// Capacity is the true capacity now.
func (v *Server) Capacity() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.c
}

// Work is the base time of the work the server has done since New: the
// goodput of the jobs it ran, counted as they ran, including the part done
// so far of those running now.
func (v *Server) Work() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.advanceLocked(time.Now())
	return time.Duration(v.work)
}

// advanceLocked brings the work done (and on a shared server the work the
// running jobs still have to do) from last to now, at the speed of the
// jobs that ran since.
func (v *Server) advanceLocked(now time.Time) {
	el := float64(now.Sub(v.last))
	v.last = now
	if !v.shared {
		v.work += el * v.speeds
		return
	}
	if n := len(v.shares); n > 0 {
		speed := v.speedLocked(n)
		for sh := range v.shares {
			sh.left -= el * speed
		}
		v.work += el * speed * float64(n)
	}
}

// Serve does one job of base time base and returns its seat time, base ×
// max(1, running/C) (made longer by SetThrash's factor past C); on a
// shared server, the time it took as the jobs beside it came and went.
func (v *Server) Serve(base time.Duration) time.Duration {
	d, _ := v.ServeContext(context.Background(), base)
	return d
}

// ServeContext is Serve cut short, with ctx.Err(), if ctx ends first.
func (v *Server) ServeContext(ctx context.Context, base time.Duration) (time.Duration, error) {
	if v.shared {
		return v.serveShared(ctx, base)
	}
	v.mu.Lock()
	v.advanceLocked(time.Now())
	v.running++
	d := SeatTime(base, v.running, v.c, v.thrash)
	var speed float64 // a job of no time does no work
	if d > 0 {
		speed = float64(base) / float64(d)
	}
	v.speeds += speed
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.advanceLocked(time.Now())
		v.running--
		v.speeds -= speed
		if v.running == 0 {
			v.speeds = 0 // no rounding left over
		}
		v.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case <-ctx.Done():
		return d, ctx.Err()
	}
}
