package admission

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"time"
)

// Acquire waits for a seat for r and returns a Permit holding it; the caller
// must call Permit.Release exactly once when the work is done.
//
// Acquire fails at once with ctx.Err() if ctx is already done (and with
// ErrInvalidConfig if it is nil), with an error
// wrapping ErrUnknownJobType for an unregistered type, and with a
// *RejectedError (ErrQueueFull, ErrClosed) when the request cannot be queued.
// While it waits, it returns ctx.Err() if ctx ends, a *RejectedError wrapping
// ErrWaitTimeout after the type's MaxWait, ErrQueueFull if a lighter caller
// pushed it out, and ErrClosed if the scheduler closes. On every error the
// request has left the queue and holds no seat.
func (s *Scheduler) Acquire(ctx context.Context, r Request) (*Permit, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: Acquire: nil context", ErrInvalidConfig)
	}
	return s.acquire(ctx, r, nil)
}

// acquire is Acquire; cancel, if not nil, is attached to the job at arrival
// so that Close can cancel the work once it runs (RunSync).
func (s *Scheduler) acquire(ctx context.Context, r Request, cancel context.CancelFunc) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	jobID, key := foldIdentifier(r.JobID), foldIdentifier(r.FairnessKey)
	var buf [8]*job
	now := s.lockAt(s.now())
	ts, err := s.typeLocked(r.Type)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	j := s.newJobLocked()
	j.jobID, j.foreground, j.cancel = jobID, true, cancel
	if r.PriorityOffset != 0 {
		j.prio, j.ownPrio = s.offsetPriorityLocked(ts, r.PriorityOffset), true
	}
	qlen := s.queued // for telemetry: the queue the request found
	dry := ""        // dry-run: what would have held the request back
	wake, err := s.enqueueLocked(j, ts, key, now, buf[:0])
	if err == nil {
		wake = s.dispatchLocked(now, wake)
		switch {
		case s.dryRun && j.state != jobRunning:
			dry = s.wouldWaitForLocked(j, now)
			s.dryAdmitLocked(j, now)
		case s.cfg.DeadlineAware && j.state != jobRunning:
			err = s.checkDeadlineLocked(ctx, j, now)
		}
	}
	admitted := j.state == jobRunning
	if err == nil && !admitted {
		if j.ready == nil {
			j.ready = make(chan struct{}, 1)
		}
		j.waiting = true
	}
	maxWait := ts.cfg.MaxWait
	s.mu.Unlock()
	s.wakeAll(wake)
	s.arrived(ctx, ts, j, key, qlen, dry, admitted, err)
	switch {
	case err != nil:
		return nil, err
	case admitted:
		return &Permit{s, j, j.gen}, nil
	}
	sp := s.startWait(ctx, j, key, qlen)
	p, err := s.wait(ctx, j, maxWait)
	s.endWait(ctx, sp, j, err)
	return p, err
}

// offsetPriorityLocked is the base priority of a request of type t with
// PriorityOffset off: the type's priority moved by off and clamped into the
// type's tier, strictly between the nearest registered priorities below and
// above it and, if the type ages, below Aging.Urgent. A request is never
// refused for its offset: SubmitWith's WithPriority fails on a priority
// that crosses a tier, because the caller chose it in code, but an offset
// comes from a request (a criticality) and the tiers from the operator,
// who may register one more type tomorrow; a server must not start failing
// requests because of that, so the offset only goes as far as there is
// room. An offset beyond ±maxPriorityOffset counts as that much.
func (s *Scheduler) offsetPriorityLocked(t *typeState, off Priority) Priority {
	base := t.cfg.Priority
	off = min(max(off, -maxPriorityOffset), maxPriorityOffset)
	lo, hi := s.tierRoomLocked(base)
	if a := t.aging; a != nil && a.Urgent > base {
		hi = min(hi, a.Urgent-1) // at Urgent a request would be urgent on arrival
	}
	return moveWithin(base, off, lo, hi)
}

// tierRoomLocked returns the priorities a job of base priority base (a
// registered tier) may take without reaching another registered tier:
// from just above the nearest tier below to just under the nearest tier
// above, math.MinInt and math.MaxInt where there is none.
func (s *Scheduler) tierRoomLocked(base Priority) (lo, hi Priority) {
	lo, hi = Priority(math.MinInt), Priority(math.MaxInt)
	for q := range s.tiers {
		switch {
		case q < base:
			lo = max(lo, q+1)
		case q > base:
			hi = min(hi, q-1)
		}
	}
	return lo, hi
}

// maxPriorityOffset bounds how far an offset moves a request where no tier
// bounds it, so that aging, which adds to the moved priority, stays far
// from overflowing and the starvation bound stays finite in practice.
const maxPriorityOffset = 1 << 16

// moveWithin returns base+off clamped to [lo, hi], where lo <= base <= hi,
// without overflowing: the distances are taken as unsigned numbers, which
// hold any difference of two ints exactly.
func moveWithin(base, off, lo, hi Priority) Priority {
	switch {
	case off > 0 && uint(off) >= uint(hi)-uint(base):
		return hi
	case off < 0 && -uint(off) >= uint(base)-uint(lo):
		return lo
	}
	return base + off
}

// wait parks the caller on its own channel until it is admitted or rejected,
// ctx ends, or maxWait passes.
func (s *Scheduler) wait(ctx context.Context, j *job, maxWait time.Duration) (*Permit, error) {
	if ctx.Done() == nil && maxWait <= 0 {
		// Nothing but the scheduler can end this wait: a plain receive,
		// not a select over channels that are never ready.
		<-j.ready
		return s.granted(j)
	}
	var timeout <-chan time.Time
	if maxWait > 0 {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-j.ready:
		return s.granted(j)
	case <-ctx.Done():
		return s.abandon(j, ctx.Err(), false)
	case <-timeout:
		return s.abandon(j, nil, true)
	}
}

// granted is the outcome of a wait that the scheduler ended: a permit, or
// the rejection.
func (s *Scheduler) granted(j *job) (*Permit, error) {
	if j.err != nil {
		return nil, j.err
	}
	return &Permit{s, j, j.gen}, nil
}

// abandon takes a waiter that gave up out of the queue. If its seat was
// granted in the meantime, the seat is handed back without charge and
// dispatch runs again; if it was rejected in the meantime, that rejection is
// returned.
func (s *Scheduler) abandon(j *job, cause error, timedOut bool) (*Permit, error) {
	var buf [8]*job
	var wake []*job
	now := s.lockAt(s.now())
	switch j.state {
	case jobQueued, jobParked:
		s.unqueueLocked(j, now)
	case jobRunning:
		s.finishLocked(j, now, 0, false)
		wake = s.dispatchLocked(now, buf[:0])
	case jobDone:
		err := j.err
		s.mu.Unlock()
		return nil, err
	}
	if timedOut {
		s.counters.RejectedWaitTimeout++
		s.emitRejectedLocked(j, j.typ, j.key.name, ErrWaitTimeout, false, now)
		cause = s.rejectLocked(ErrWaitTimeout, false, j.typ, j.key, now)
	} else {
		s.counters.Cancelled++
	}
	j.err = cause
	s.mu.Unlock()
	s.wakeAll(wake)
	return nil, cause
}

// Release gives the seat back, charges the key the measured seat time and
// feeds it to the cost estimate. Calling it twice is a bug and panics.
func (p *Permit) Release() {
	s, j := p.s, p.j
	var buf [8]*job
	now := s.lockAt(s.now())
	if j.gen != p.gen || j.state != jobRunning {
		s.mu.Unlock()
		panic("admission: Permit.Release called on a permit that is not held (released twice?)")
	}
	s.finishLocked(j, now, sinceNs(now, j.started), true)
	wake := s.dispatchLocked(now, buf[:0])
	s.freeJobLocked(j) // nothing refers to a released foreground record but stale handles
	s.mu.Unlock()
	s.wakeAll(wake)
}

// RunSync waits for a seat like Acquire, runs fn holding it, releases it and
// returns fn's error. fn's context is ctx, also cancelled when Close gives up
// waiting. If fn panics, the seat is released and the panic continues.
func (s *Scheduler) RunSync(ctx context.Context, t JobType, jobID, fairnessKey string, fn func(context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("%w: RunSync: nil fn for job type %q", ErrInvalidConfig, t)
	}
	if ctx == nil {
		return fmt.Errorf("%w: RunSync: nil context", ErrInvalidConfig)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, err := s.acquire(ctx, Request{Type: t, JobID: jobID, FairnessKey: fairnessKey}, cancel)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx)
}

// CountExempt records a request that a transport let bypass admission (a
// health check, a metrics scrape): it takes no seat and never waits, but
// operators see it in Snapshot().Counters.Exempt.
func (s *Scheduler) CountExempt() {
	s.mu.Lock()
	s.counters.Exempt++
	s.mu.Unlock()
}

// wakeAll acts on the jobs a locked section admitted or rejected, after the
// lock is released: waiting callers are woken, admitted background jobs
// start, rejected background jobs are reported.
func (s *Scheduler) wakeAll(wake []*job) {
	for _, j := range wake {
		switch {
		case j.foreground:
			if j.waiting {
				j.ready <- struct{}{} // buffered, one token per wait: never blocks
			}
		case j.err != nil:
			s.reportDropped(j)
		default:
			go s.runBackground(j)
		}
	}
}

func (s *Scheduler) reportDropped(j *job) {
	s.backgroundDropped(j)
	s.log.Warn("admission: background job did not run", "type", string(j.typ.name), "job_id", j.jobID, "err", j.err)
}

// runBackground runs an admitted background job and releases its seat.
func (s *Scheduler) runBackground(j *job) {
	defer s.wg.Done()
	s.backgroundStarted(j)
	err := s.call(j)
	var buf [8]*job
	now := s.lockAt(s.now())
	s.finishLocked(j, now, sinceNs(now, j.started), true)
	retry := false
	if err != nil {
		s.counters.Failed++
		retry = s.retryLocked(j, err, now)
		s.emitJobEndLocked(EventBackgroundFailed, j, err, now)
	}
	wake := s.dispatchLocked(now, buf[:0])
	s.mu.Unlock()
	s.wakeAll(wake)
	if err != nil {
		s.log.Warn("admission: background job failed", "type", string(j.typ.name), "job_id", j.jobID, "err", err, "retry", retry)
	}
}

// call runs a background job's fn, turning a panic into ErrJobPanicked.
func (s *Scheduler) call(j *job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrJobPanicked, v, debug.Stack())
		}
	}()
	ctx, cancel := context.WithCancel(j.bg.ctx)
	defer cancel()
	defer context.AfterFunc(s.baseCtx, cancel)()
	return j.bg.fn(ctx)
}
