package admission

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by the scheduler. Match them with errors.Is; the errors
// returned may wrap them with detail (see [RejectedError]).
var (
	// ErrQueueFull: the queue, or the caller's share of it, is full, or the
	// request was pushed out by a lighter caller's arrival.
	ErrQueueFull = errors.New("admission: queue full")
	// ErrWaitTimeout: the request waited its job type's MaxWait.
	ErrWaitTimeout = errors.New("admission: wait timeout")
	// ErrClosed: the scheduler is closing or closed.
	ErrClosed = errors.New("admission: scheduler closed")
	// ErrUnknownJobType: the job type was never registered.
	ErrUnknownJobType = errors.New("admission: unknown job type")
	// ErrInvalidConfig: a Config, JobTypeConfig or argument is invalid; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("admission: invalid config")
	// ErrJobPanicked: a background job panicked; the panic value is in the
	// wrapping error.
	ErrJobPanicked = errors.New("admission: job panicked")
	// ErrDeadlineTooSoon: the caller's deadline ends before the request
	// could start (Config.DeadlineAware), so it was turned away at once
	// instead of timing out in the queue.
	ErrDeadlineTooSoon = errors.New("admission: deadline ends before the request could start")
	// ErrBadCostFile: a FileCostStore's file is not a cost file this
	// version can read (wrong magic, newer version, truncated, checksum
	// mismatch, over the size bounds), or its capacity file holds no limit;
	// the wrapping error says which.
	ErrBadCostFile = errors.New("admission: unusable cost file")
	// ErrOverloaded: queue-delay shedding (AdaptiveConfig.QueueDelayTarget)
	// refused the request at once: a standing queue has formed and the
	// caller holds at least its share of the server.
	ErrOverloaded = errors.New("admission: server overloaded")
)

// RejectedError is the error of a request the scheduler turned away or gave
// up on. It unwraps to its Reason, one of the sentinel errors above. It is
// created by the scheduler and not modified afterwards; its zero value is
// meaningless.
type RejectedError struct {
	Reason error // ErrQueueFull, ErrWaitTimeout, ErrClosed, ErrDeadlineTooSoon or ErrOverloaded
	// PerKey is true when the caller's own share caused the rejection (its
	// MaxQueued, or it was the longest queue when the queue was full), false
	// when the whole server is overloaded or shutting down. Transports map it
	// to ResourceExhausted/429 and Unavailable/503.
	PerKey bool
	// RetryAfter estimates when a retry could be admitted: when the first
	// running job is expected to end, plus the time for the caller's own
	// queued work to drain at the current capacity. Zero for ErrClosed.
	RetryAfter time.Duration
	Type       JobType // the request's
}

func (e *RejectedError) Error() string {
	scope := "server"
	if e.PerKey {
		scope = "caller"
	}
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (job type %q, %s limit; retry after %v)", e.Reason, e.Type, scope, e.RetryAfter)
	}
	return fmt.Sprintf("%v (job type %q, %s limit)", e.Reason, e.Type, scope)
}

func (e *RejectedError) Unwrap() error { return e.Reason }
