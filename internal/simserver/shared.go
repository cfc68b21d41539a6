package simserver

import (
	"context"
	"math"
	"time"
)

// NewShared returns a server of true capacity c (> 0) that shares itself
// among the jobs it runs, as a CPU or a disk does: at every instant each
// running job progresses at the rate that SeatTime gives n jobs, base /
// SeatTime(base, n, c, a), n being the jobs running then rather than at
// the job's start. A job started when the server was quiet slows down as
// soon as others join it, so a limiter that runs more than C jobs for a
// moment gets no more than C seats of work from it (a server of New does,
// until the jobs started under the lighter load end). At a constant n
// both servers give every job the same seat time.
func NewShared(c int) *Server { return &Server{c: c, shared: true} }

// share is a job on a shared server: the base time it still has to do, in
// nanoseconds, and the channel closed when it is done.
type share struct {
	left float64
	done chan struct{}
}

// speedLocked is the rate at which each of n running jobs progresses: the
// base time it does per second.
func (v *Server) speedLocked(n int) float64 {
	return float64(time.Second) / float64(SeatTime(time.Second, n, v.c, v.thrash))
}

// wakeLocked ends the jobs whose work is done (a nanosecond of base time
// left is rounding) and sets the timer for the next one to end at the
// current rate.
func (v *Server) wakeLocked() {
	next := math.Inf(1)
	for sh := range v.shares {
		if sh.left <= 1 {
			delete(v.shares, sh)
			close(sh.done)
			continue
		}
		next = min(next, sh.left)
	}
	if math.IsInf(next, 1) {
		if v.timer != nil {
			v.timer.Stop()
		}
		return
	}
	d := time.Duration(math.Ceil(next / v.speedLocked(len(v.shares))))
	if v.timer == nil {
		v.timer = time.AfterFunc(d, v.tick)
		return
	}
	v.timer.Reset(d)
}

// tick is the timer's: a job may have ended (a change of nothing brings
// the jobs' work to now and ends those done).
func (v *Server) tick() { v.change(func() {}) }

// serveShared is ServeContext on a shared server.
func (v *Server) serveShared(ctx context.Context, base time.Duration) (time.Duration, error) {
	start := time.Now()
	sh := &share{left: float64(base), done: make(chan struct{})}
	v.mu.Lock()
	v.advanceLocked(start)
	if v.shares == nil {
		v.shares = make(map[*share]struct{})
	}
	v.shares[sh] = struct{}{}
	v.wakeLocked()
	v.mu.Unlock()
	var err error
	select {
	case <-sh.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	v.mu.Lock()
	if _, ok := v.shares[sh]; ok {
		v.advanceLocked(time.Now())
		delete(v.shares, sh)
		v.wakeLocked()
	}
	v.mu.Unlock()
	return time.Since(start), err
}
