package admission

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DuplicatePolicy says what Submit does with a background job whose type and
// job ID match a job of the same type still queued (not yet running).
type DuplicatePolicy uint8

const (
	// Allow queues every submission (the default).
	Allow DuplicatePolicy = iota
	// Coalesce lets the queued job absorb the new submission: the new fn is
	// not queued, and Submit returns nil. A git cache never queues 50
	// repacks of one repository.
	Coalesce
	// Supersede replaces the queued job with the new submission, whose aging
	// clock starts afresh; the old job ends as superseded.
	Supersede
)

// RetryPolicy retries background jobs whose error is marked with
// [Retryable]: the job is queued again after a backoff that starts at
// Initial and doubles up to Max, at most MaxAttempts attempts in all. Its
// aging clock continues from the first submission, so a retried job does not
// lose its place to newer work. The zero value never retries.
type RetryPolicy struct {
	MaxAttempts  int           // attempts in all, including the first; 0 or 1 = no retry
	Initial, Max time.Duration // backoff before the second attempt, and its ceiling; 0 = 1s and 1m
}

// Retryable marks err as worth retrying under the job type's RetryPolicy.
// It returns nil for a nil err.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryableError{err}
}

type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// IsRetryable reports whether err, or an error it wraps, was marked with
// Retryable.
func IsRetryable(err error) bool {
	var r *retryableError
	return errors.As(err, &r)
}

// ErrSuperseded ends a queued background job replaced by a newer submission
// (DuplicatePolicy Supersede).
var ErrSuperseded = errors.New("admission: superseded by a newer submission")

// A SubmitOption sets a per-job option of [Scheduler.SubmitWith].
type SubmitOption interface{ applySubmit(*submitOptions) }

type submitOptions struct {
	ttl      time.Duration
	prio     Priority
	havePrio bool
	key      string
}

type submitOptionFunc func(*submitOptions)

func (f submitOptionFunc) applySubmit(o *submitOptions) { f(o) }

// WithTTL bounds the time the job may stay queued, in place of its type's
// MaxWait: a job still queued after d is expired, counted
// (RejectedWaitTimeout) and reported, never dropped silently. Time spent
// paused does not count. d must be positive.
func WithTTL(d time.Duration) SubmitOption {
	return submitOptionFunc(func(o *submitOptions) { o.ttl = d })
}

// WithPriority overrides the job's base priority for ordering and aging.
// The job still counts against its type's tier and limits, and p must stay
// within the tier: no other registered tier's priority may lie between the
// type's priority and p (inclusive), so the override reorders work within a
// tier but never lifts background work above foreground.
func WithPriority(p Priority) SubmitOption {
	return submitOptionFunc(func(o *submitOptions) { o.prio, o.havePrio = p, true })
}

// WithFairnessKey runs the job under fairness key key instead of "" (work done
// on behalf of a caller is charged to that caller).
func WithFairnessKey(key string) SubmitOption {
	return submitOptionFunc(func(o *submitOptions) { o.key = key })
}

// Submit queues background work with fairness key "" and returns at once. It
// is SubmitWith with a background context and no options.
func (s *Scheduler) Submit(t JobType, jobID string, fn func(context.Context) error) error {
	return s.SubmitWith(context.Background(), t, jobID, fn)
}

// SubmitWith queues background work and returns at once. fn runs in its own
// goroutine when admitted; its context carries ctx's values (a trace span,
// say) but not ctx's cancellation or deadline — the caller's request usually
// ends long before its background work runs — and is cancelled when Close
// gives up waiting.
//
// It fails with an error wrapping ErrUnknownJobType, ErrInvalidConfig (nil
// ctx or fn, bad option), ErrQueueFull or ErrClosed when the job cannot be
// queued. With the type's DuplicatePolicy, a submission may be absorbed by a
// queued job (Coalesce, returns nil) or replace it (Supersede). Once queued,
// the job's error, a panic, its expiry (MaxWait or WithTTL), push-out,
// supersession or drop at Close is reported through the logger and the
// Snapshot counters; errors marked Retryable are retried under the type's
// RetryPolicy.
func (s *Scheduler) SubmitWith(ctx context.Context, t JobType, jobID string, fn func(context.Context) error, opts ...SubmitOption) error {
	if ctx == nil {
		return fmt.Errorf("%w: SubmitWith: nil context for job type %q", ErrInvalidConfig, t)
	}
	if fn == nil {
		return fmt.Errorf("%w: Submit: nil fn for job type %q", ErrInvalidConfig, t)
	}
	var o submitOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applySubmit(&o)
		}
	}
	if o.ttl < 0 {
		return fmt.Errorf("%w: Submit(%q): WithTTL must be > 0, got %v", ErrInvalidConfig, t, o.ttl)
	}
	j := &job{jobID: foldIdentifier(jobID), bg: &bgJob{fn: fn, ctx: context.WithoutCancel(ctx)}}
	var buf [8]*job
	now := s.lockAt(s.now())
	ts, err := s.typeLocked(t)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	j.bg.ttl = ts.cfg.MaxWait
	if o.ttl > 0 {
		j.bg.ttl = o.ttl
	}
	if o.havePrio {
		if err := s.checkPriorityLocked(ts, o.prio); err != nil {
			s.mu.Unlock()
			return err
		}
		j.prio, j.ownPrio = o.prio, true
	}
	wake, err := s.submitLocked(j, ts, foldIdentifier(o.key), now, buf[:0])
	s.mu.Unlock()
	s.wakeAll(wake)
	s.submitted(ts, err)
	return err
}

// checkPriorityLocked validates a WithPriority override for type t.
func (s *Scheduler) checkPriorityLocked(t *typeState, p Priority) error {
	base := t.cfg.Priority
	if lo, hi := s.tierRoomLocked(base); p < lo || p > hi {
		crossed := lo - 1 // the nearest tier on p's side
		if p > hi {
			crossed = hi + 1
		}
		return fmt.Errorf("%w: Submit(%q): WithPriority(%d) crosses tier %d; the type's tier is %d",
			ErrInvalidConfig, t.name, p, crossed, base)
	}
	if a := s.cfg.Aging; a != nil && a.Urgent > 0 && p >= a.Urgent {
		return fmt.Errorf("%w: Submit(%q): WithPriority(%d) must be below Aging.Urgent %d", ErrInvalidConfig, t.name, p, a.Urgent)
	}
	return nil
}

// submitLocked queues background job j (new, or a retry whose aging clock
// continues) under key, applying the type's duplicate policy, and
// dispatches; a job still waiting then enters the duplicate index and
// starts its TTL.
func (s *Scheduler) submitLocked(j *job, t *typeState, key string, now int64, wake []*job) ([]*job, error) {
	dk := costKey{t.name, j.jobID}
	if t.cfg.Duplicates != Allow && !s.closing {
		if old := s.pending[dk]; old != nil {
			if t.cfg.Duplicates == Coalesce || j.bg.attempts > 0 {
				// A retry never displaces a newer submission of the same job.
				s.counters.Submitted++
				s.counters.Coalesced++
				return wake, nil
			}
			s.unqueueLocked(old, now)
			s.counters.Superseded++
			old.err = ErrSuperseded
			wake = append(wake, old)
		}
	}
	wake, err := s.enqueueLocked(j, t, key, now, wake)
	if err != nil {
		return wake, err
	}
	if s.dryRun && j.state != jobRunning {
		s.dryAdmitLocked(j, now)
		wake = append(wake, j)
	}
	wake = s.dispatchLocked(now, wake)
	if j.state == jobQueued || j.state == jobParked { // it waits: index it, start its TTL
		if t.cfg.Duplicates != Allow {
			s.pending[dk] = j
		}
		if b := j.bg; b.ttl > 0 {
			b.expiresAt = now + int64(b.ttl)
			b.timer = s.afterFunc(b.ttl, func() { s.expire(j) })
			if j.frozenAt != 0 {
				b.timer.Stop() // arrived paused: its TTL starts when the pause lifts
			}
		}
	}
	return wake, nil
}

// unpendLocked takes a background job that leaves the queue out of the
// duplicate index.
func (s *Scheduler) unpendLocked(j *job) {
	if j.typ.cfg.Duplicates == Allow || j.foreground {
		return
	}
	dk := costKey{j.typ.name, j.jobID}
	if s.pending[dk] == j {
		delete(s.pending, dk)
	}
}

// expire ends a background job still queued after its TTL.
func (s *Scheduler) expire(j *job) {
	now := s.lockAt(s.now())
	if (j.state != jobQueued && j.state != jobParked) || j.frozenAt != 0 || now < j.bg.expiresAt {
		s.mu.Unlock() // ran, left, froze, or its TTL was extended since this timer fired
		return
	}
	s.unqueueLocked(j, now)
	s.counters.RejectedWaitTimeout++
	s.counters.Expired++
	j.err = s.rejectLocked(ErrWaitTimeout, false, j.typ, nil, now)
	s.emitJobEndLocked(EventBackgroundExpired, j, j.err, now)
	s.mu.Unlock()
	s.reportDropped(j)
}

// retryLocked queues a failed background job again after its backoff if its
// error is retryable and it has attempts left, and reports whether it will.
func (s *Scheduler) retryLocked(j *job, err error, now int64) bool {
	rp := j.typ.cfg.Retry
	j.bg.attempts++
	if !IsRetryable(err) || j.bg.attempts >= rp.MaxAttempts || s.closing {
		return false
	}
	backoff := rp.Initial
	if backoff == 0 {
		backoff = time.Second
	}
	ceiling := rp.Max
	if ceiling == 0 {
		ceiling = time.Minute
	}
	for i := 1; i < j.bg.attempts && backoff < ceiling; i++ {
		backoff *= 2
	}
	backoff = min(backoff, ceiling)
	s.counters.Retried++
	s.retrying[j] = true
	j.bg.timer = s.afterFunc(backoff, func() { s.requeue(j) })
	return true
}

// requeue queues a job again when its retry backoff has passed.
func (s *Scheduler) requeue(j *job) {
	var buf [8]*job
	now := s.lockAt(s.now())
	if !s.retrying[j] {
		s.mu.Unlock() // Close took it
		return
	}
	delete(s.retrying, j)
	r := *j // a fresh record: the old one may still be referenced by its finished run
	b := *j.bg
	b.timer, b.expiresAt = nil, 0
	r.bg = &b
	r.state, r.idx, r.err, r.res, r.cost, r.frozenAt, r.started = jobNew, -1, nil, nil, nil, 0, 0
	wake, err := s.submitLocked(&r, r.typ, r.key.name, now, buf[:0])
	s.mu.Unlock()
	s.wakeAll(wake)
	if err != nil {
		r.err = err
		s.reportDropped(&r)
	}
}
