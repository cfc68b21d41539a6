package admission

import (
	"fmt"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind uint8

// The kinds of [Event].
const (
	// EventAged: a job was admitted after aging promotions (Promotions > 0).
	// BasePriority, EffectivePriority, Promotions and Wait describe it.
	EventAged EventKind = iota + 1
	// EventUrgent: a job was admitted while urgent (it may have exceeded its
	// tier cap). An urgent admission is also aged, so EventAged precedes it.
	EventUrgent
	// EventAllocationChanged: the fair-share allocation of a configured key
	// (Key is its name in Config.Keys) or of the unconfigured keys together
	// (Key is "other") changed from Previous to New seats, for Reason. See
	// the package doc ("Observability") for the definition and for when it
	// is emitted.
	EventAllocationChanged
	// EventRejected: a request or job was turned away: Err is a
	// *RejectedError (Reason and PerKey set, RetryAfter left zero) wrapping
	// ErrQueueFull (at arrival), ErrWaitTimeout (a foreground waiter's
	// MaxWait), ErrOverloaded (queue-delay shedding, at arrival) or
	// ErrClosed (at arrival, or queued when Close was called).
	EventRejected
	// EventShed: a queued job was pushed out by the arrival of a key with
	// fewer queued jobs (Err wraps ErrQueueFull). Key is the victim's key.
	EventShed
	// EventBackgroundFailed: a background job returned an error or panicked
	// (Err).
	EventBackgroundFailed
	// EventBackgroundDropped: a background job never ran because Close's
	// context ended (Err wraps ErrClosed).
	EventBackgroundDropped
	// EventBackgroundExpired: a background job waited its type's MaxWait and
	// was dropped (Err wraps ErrWaitTimeout).
	EventBackgroundExpired
	// EventOverflow: the handler fell behind and Dropped events were lost
	// before this one; it is delivered first when the buffer has room again.
	EventOverflow
	// EventCapacityChanged: the capacity changed from Previous to New seats,
	// for CapacityReason (adaptive capacity; SetCapacity of a fixed
	// capacity is not reported).
	EventCapacityChanged
)

var eventKindNames = [...]string{
	EventAged:              "aged",
	EventUrgent:            "urgent",
	EventAllocationChanged: "allocation_changed",
	EventRejected:          "rejected",
	EventShed:              "shed",
	EventBackgroundFailed:  "background_failed",
	EventBackgroundDropped: "background_dropped",
	EventBackgroundExpired: "background_expired",
	EventOverflow:          "overflow",
	EventCapacityChanged:   "capacity_changed",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// AllocationReason says why a fair-share allocation changed.
type AllocationReason string

// The reasons of [EventAllocationChanged].
const (
	// AllocationKeyActivated: the key itself became active (Previous is 0).
	AllocationKeyActivated AllocationReason = "key_activated"
	// AllocationKeyDrained: the key itself went idle (New is 0).
	AllocationKeyDrained AllocationReason = "key_drained"
	// AllocationRebalance: another key became active or went idle, so the
	// key's share of the capacity changed.
	AllocationRebalance AllocationReason = "rebalance"
	// AllocationWeightChange: a key's weight changed (SetWeight, ResetWeights,
	// SetKeyPolicy).
	AllocationWeightChange AllocationReason = "weight_change"
)

// An Event reports a scheduling decision to the handler set with
// [WithEventHandler]. Which fields are set depends on Kind (see the
// constants); the others are zero. It is a plain value.
//
// Events carry raw fairness keys and job IDs: unlike spans, they do not leave
// the process unless the handler sends them somewhere, and a handler that
// does should treat them as possibly personal data.
type Event struct {
	Kind EventKind
	Time time.Time // the scheduler's clock at the decision

	Type       JobType
	JobID      string
	Key        string // fairness key; for EventAllocationChanged the configured key or "other"
	Foreground bool   // Acquire or RunSync, as opposed to Submit

	BasePriority      Priority      // EventAged, EventUrgent
	EffectivePriority Priority      // at admission: EventAged, EventUrgent
	Promotions        int           // aging promotions at admission
	Wait              time.Duration // time queued until the decision (not for EventAllocationChanged)

	Err error // EventRejected, EventShed, EventBackground*

	Previous, New float64          // EventAllocationChanged, EventCapacityChanged, in seats
	Reason        AllocationReason // EventAllocationChanged
	// CapacityReason says why the capacity changed (EventCapacityChanged).
	CapacityReason CapacityReason

	Dropped uint64 // EventOverflow: events lost since the last delivered one
}

// WithEventHandler sets a function that receives every [Event], in order.
// It is called from one goroutine owned by the scheduler, started at the
// first event and stopped by Close (which waits for it after delivering the
// events already queued), never while the scheduler's lock is held, so it
// may call the Scheduler's methods (but not Close, which would wait for the
// handler itself). A slow handler never slows scheduling: at most
// EventBuffer events wait for it, further ones are dropped, counted in
// Counters.EventsDropped and the fairseat.events.dropped metric, logged once
// per burst, and announced to the handler by an EventOverflow. Events that
// happen after Close returns are dropped and counted the same way. A panic
// in the handler is recovered and logged. A nil handler disables events.
func WithEventHandler(h func(Event)) Option {
	return optionFunc(func(o *options) { o.eventHandler = h })
}

// EventBuffer is the number of events that may wait for a slow handler.
const EventBuffer = 1024

// eventQueue delivers events to the handler. handler never changes after
// New; every other field is guarded by Scheduler.mu.
//
// Invariants: ch != nil iff the delivering goroutine runs (it exits when ch
// is closed, then closes done); stopped once Close has stopped it, after
// which ch is nil for good; burst counts the events dropped since the last
// one queued, and an EventOverflow carrying it is queued before the next.
type eventQueue struct {
	handler func(Event)

	ch      chan Event
	done    chan struct{}
	stopped bool
	burst   uint64
}

// emitLocked queues e for the handler, or counts it as dropped. It never
// blocks. Callers check that a handler is set (the emit helpers below).
func (s *Scheduler) emitLocked(e Event) {
	q := &s.obs.events
	if q.stopped {
		s.counters.EventsDropped++
		return
	}
	if q.ch == nil {
		q.ch, q.done = make(chan Event, EventBuffer), make(chan struct{})
		go s.deliverEvents(q.ch, q.done, q.handler)
	}
	if q.burst > 0 {
		select {
		case q.ch <- Event{Kind: EventOverflow, Time: e.Time, Dropped: q.burst}:
			q.burst = 0
		default:
			s.counters.EventsDropped++
			q.burst++
			return
		}
	}
	select {
	case q.ch <- e:
	default:
		s.counters.EventsDropped++
		q.burst++
	}
}

// deliverEvents is the delivering goroutine.
func (s *Scheduler) deliverEvents(ch <-chan Event, done chan<- struct{}, h func(Event)) {
	defer close(done)
	for e := range ch {
		if e.Kind == EventOverflow {
			s.log.Warn("admission: event handler too slow; events dropped", "dropped", e.Dropped)
		}
		s.callHandler(h, e)
	}
}

func (s *Scheduler) callHandler(h func(Event), e Event) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("admission: event handler panicked", "event", e.Kind.String(), "panic", v)
		}
	}()
	h(e)
}

// stopEvents delivers the queued events, stops the delivering goroutine and
// waits for it (Close).
func (s *Scheduler) stopEvents() {
	s.mu.Lock()
	q := &s.obs.events
	q.stopped = true
	ch, done, burst := q.ch, q.done, q.burst
	q.ch, q.burst = nil, 0
	s.mu.Unlock()
	if ch != nil {
		close(ch)
		<-done
	}
	if burst > 0 {
		s.log.Warn("admission: event handler too slow; events dropped", "dropped", burst)
	}
}

// The emit helpers below are the scheduler's event hooks. Each returns at
// once when no handler is set; all run under Scheduler.mu.

// emitAdmittedLocked reports an aged or urgent admission (seatLocked).
func (s *Scheduler) emitAdmittedLocked(j *job, now int64) {
	if s.obs.events.handler == nil || (j.promoted == 0 && !j.urgent) {
		return
	}
	s.emitAdmittedSlowLocked(j, now)
}

func (s *Scheduler) emitAdmittedSlowLocked(j *job, now int64) {
	e := s.jobEvent(EventAged, j, now)
	e.BasePriority, e.EffectivePriority, e.Promotions = j.prio, j.eff, j.promoted
	if j.promoted > 0 {
		s.emitLocked(e)
	}
	if j.urgent {
		e.Kind = EventUrgent
		s.emitLocked(e)
	}
}

// emitRejectedLocked reports a rejection of j, of type t and key key (j's
// type and key may not be set yet at arrival).
func (s *Scheduler) emitRejectedLocked(j *job, t *typeState, key string, reason error, perKey bool, now int64) {
	if s.obs.events.handler == nil {
		return
	}
	e := Event{Kind: EventRejected, Time: s.timeAt(now), Type: t.name, JobID: j.jobID, Key: key, Foreground: j.foreground,
		Err: &RejectedError{Reason: reason, PerKey: perKey, Type: t.name}}
	if j.enqueued != 0 {
		e.Wait = sinceNs(now, j.enqueued)
	}
	s.emitLocked(e)
}

// emitJobEndLocked reports a job that left the queue or ended with err:
// EventShed, EventBackgroundFailed, EventBackgroundDropped or
// EventBackgroundExpired.
func (s *Scheduler) emitJobEndLocked(kind EventKind, j *job, err error, now int64) {
	if s.obs.events.handler == nil {
		return
	}
	e := s.jobEvent(kind, j, now)
	e.Err = err
	s.emitLocked(e)
}

func (s *Scheduler) jobEvent(kind EventKind, j *job, now int64) Event {
	e := Event{Kind: kind, Time: s.timeAt(now), Type: j.typ.name, JobID: j.jobID, Foreground: j.foreground,
		Wait: sinceNs(now, j.enqueued)}
	if j.key != nil {
		e.Key = j.key.name
	}
	if j.started != 0 { // admitted: the wait ended then
		e.Wait = time.Duration(j.started - j.enqueued)
	}
	return e
}
