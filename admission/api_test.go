package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// newTestScheduler builds a scheduler with one foreground type "fg" (conflict
// group "git") and one background type "bg".
func newTestScheduler(t testing.TB, cfg Config, fg, bg JobTypeConfig) *Scheduler {
	t.Helper()
	s, err := New(cfg)
	must(t, err)
	if fg.Priority == 0 {
		fg.Priority = PriorityForeground
	}
	if fg.ConflictGroup == "" {
		fg.ConflictGroup = "git"
	}
	if bg.Priority == 0 {
		bg.Priority = PriorityBackground
	}
	must(t, s.RegisterType("fg", fg))
	must(t, s.RegisterType("bg", bg))
	return s
}

// acquireAsync starts Acquire in a goroutine; the returned channel yields
// its permit or error once.
type result struct {
	p   *Permit
	err error
}

func acquireAsync(ctx context.Context, s *Scheduler, r Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		p, err := s.Acquire(ctx, r)
		ch <- result{p, err}
	}()
	return ch
}

func TestUnknownTypeAndNilFn(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	if _, err := s.Acquire(t.Context(), Request{Type: "nope"}); !errors.Is(err, ErrUnknownJobType) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Acquire unknown type: %v", err)
	}
	if err := s.Submit("nope", "x", func(context.Context) error { return nil }); !errors.Is(err, ErrUnknownJobType) {
		t.Errorf("Submit unknown type: %v", err)
	}
	if err := s.Submit("bg", "x", nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Submit nil fn: %v", err)
	}
	if err := s.RunSync(t.Context(), "fg", "x", "k", nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("RunSync nil fn: %v", err)
	}
	checkInvariants(t, s)
	if snap := s.Snapshot(); snap.Counters.Submitted != 0 || snap.Queued != 0 {
		t.Errorf("refused calls changed the scheduler: %+v", snap.Counters)
	}
	must(t, s.Close(t.Context()))
}

// TestNilContext: a nil context is an error that names it, never a panic,
// and Close takes nil as no deadline.
func TestNilContext(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	//lint:ignore SA1012 the nil is the test
	if _, err := s.Acquire(nil, Request{Type: "fg"}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Acquire(nil) = %v", err)
	}
	//lint:ignore SA1012 the nil is the test
	if err := s.RunSync(nil, "fg", "x", "k", func(context.Context) error { return nil }); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("RunSync(nil) = %v", err)
	}
	//lint:ignore SA1012 the nil is the test
	must(t, s.Close(nil))
}

// TestCancelledContext: a done context fails at once and leaves the
// scheduler unchanged.
func TestCancelledContext(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Acquire(ctx, Request{Type: "fg", JobID: "r", FairnessKey: "k"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with cancelled ctx: %v", err)
	}
	if snap := s.Snapshot(); snap.Counters.Submitted != 0 {
		t.Fatalf("counters changed: %+v", snap.Counters)
	}
	must(t, s.Close(t.Context()))
}

// TestCancelWhileQueued: a waiter whose context ends leaves the queue at once
// and never takes a seat.
func TestCancelWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k1"})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		ch := acquireAsync(ctx, s, Request{Type: "fg", JobID: "b", FairnessKey: "k2"})
		synctest.Wait()
		if q := s.Snapshot().Queued; q != 1 {
			t.Fatalf("queued = %d, want 1", q)
		}
		cancel()
		r := <-ch
		if !errors.Is(r.err, context.Canceled) || r.p != nil {
			t.Fatalf("cancelled waiter got %v, %v", r.p, r.err)
		}
		checkInvariants(t, s)
		snap := s.Snapshot()
		if snap.Queued != 0 || snap.Counters.Cancelled != 1 || snap.InUse != 1 {
			t.Fatalf("after cancel: queued %d, counters %+v", snap.Queued, snap.Counters)
		}
		p.Release()
		if snap := s.Snapshot(); snap.InUse != 0 || snap.Counters.Admitted != 1 {
			t.Fatalf("the cancelled waiter took the seat: %+v", snap)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestGrantThenCancel drives the grant-vs-cancel race deterministically: the
// seat is granted to a waiter that has already given up. The seat must go
// back, the key must be refunded in full, nothing must be learned from the
// zero run, and the seat must be re-dispatched to the next waiter.
func TestGrantThenCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{DefaultCost: 5 * time.Second}, JobTypeConfig{})
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k1"})
		must(t, err)
		// The quitter queues first, so it is the one granted on release (its
		// key and the next waiter's both start at V_sys; the older goes first).
		quitter := &job{jobID: "b", foreground: true}
		s.mu.Lock()
		_, err = s.enqueueLocked(quitter, s.types["fg"], "k2", time.Now().UnixNano(), nil)
		quitter.ready = make(chan struct{})
		vBefore := s.activeKeyLocked("k2").v
		s.mu.Unlock()
		must(t, err)
		next := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "c", FairnessKey: "k3"})
		synctest.Wait()

		time.Sleep(time.Second)
		holder.Release()
		if quitter.state != jobRunning { // no other goroutine runs: the bubble is idle
			t.Fatalf("quitter state %d after release, want running", quitter.state)
		}
		// The waiter gave up just as it was granted.
		if _, err := s.abandon(quitter, context.Canceled, false); !errors.Is(err, context.Canceled) {
			t.Fatalf("abandon = %v", err)
		}
		checkInvariants(t, s)
		s.mu.Lock()
		_, learned := s.costs.Peek(costKey{"fg", "b"})
		k2 := s.keys.get("k2")
		s.mu.Unlock()
		if learned {
			t.Error("a handed-back seat taught the cost estimator a zero run")
		}
		if k2.v != vBefore {
			t.Errorf("k2 virtual time %v after give-back, want %v (full refund)", k2.v, vBefore)
		}
		r := <-next // the seat was re-dispatched to the other waiter
		must(t, r.err)
		r.p.Release()
		snap := s.Snapshot()
		if snap.InUse != 0 || snap.Counters.Cancelled != 1 || snap.Counters.Completed != 2 {
			t.Fatalf("after give-back: %+v", snap.Counters)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestMaxWait: a request that waits its type's MaxWait fails with a
// RejectedError wrapping ErrWaitTimeout and carrying a retry hint.
func TestMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{MaxWait: 2 * time.Second, DefaultCost: 10 * time.Second}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k1"})
		must(t, err)
		start := time.Now()
		r := <-acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k2"})
		var rej *RejectedError
		if !errors.As(r.err, &rej) || !errors.Is(r.err, ErrWaitTimeout) || rej.PerKey {
			t.Fatalf("err = %v, want a server-side RejectedError(ErrWaitTimeout)", r.err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("waited %v, want exactly MaxWait", waited)
		}
		// The running job has 8s of its 10s estimate left.
		if rej.RetryAfter != 8*time.Second {
			t.Errorf("RetryAfter = %v, want 8s", rej.RetryAfter)
		}
		p.Release()
		checkInvariants(t, s)
		if c := s.Snapshot().Counters; c.RejectedWaitTimeout != 1 || c.Admitted != 1 {
			t.Errorf("counters %+v", c)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestBackgroundMaxWait: a background job still queued after MaxWait is
// reported and counted, not silently dropped.
func TestBackgroundMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{MaxWait: time.Minute})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a"})
		must(t, err)
		ran := false
		must(t, s.Submit("bg", "r", func(context.Context) error { ran = true; return nil }))
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		p.Release()
		synctest.Wait()
		checkInvariants(t, s)
		if c := s.Snapshot().Counters; ran || c.RejectedWaitTimeout != 1 {
			t.Fatalf("ran=%v counters %+v", ran, c)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestPushOut: when the queue is full, a key with fewer queued jobs than the
// longest key pushes out that key's newest job; the longest key itself is
// turned away.
func TestPushOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, MaxQueue: 3}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x", FairnessKey: "heavy"})
		must(t, err)
		var heavy []<-chan result
		for i := range 3 {
			heavy = append(heavy, acquireAsync(t.Context(), s, Request{Type: "fg", JobID: fmt.Sprint("h", i), FairnessKey: "heavy"}))
			synctest.Wait()
		}
		// The queue is full; the heavy key's own arrival is refused.
		_, err = s.Acquire(t.Context(), Request{Type: "fg", JobID: "h4", FairnessKey: "heavy"})
		var rej *RejectedError
		if !errors.As(err, &rej) || !errors.Is(err, ErrQueueFull) || !rej.PerKey {
			t.Fatalf("heavy arrival on a full queue: %v", err)
		}
		// A light key pushes out the heavy key's newest job (h2).
		light := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "l0", FairnessKey: "light"})
		synctest.Wait()
		r := <-heavy[2]
		if !errors.Is(r.err, ErrQueueFull) {
			t.Fatalf("newest heavy job: %v, want pushed out", r.err)
		}
		checkInvariants(t, s)
		if c := s.Snapshot().Counters; c.PushedOut != 1 || c.RejectedQueueFull != 2 {
			t.Fatalf("counters %+v", c)
		}
		time.Sleep(time.Second) // the heavy key's running job costs what it was charged
		p.Release()
		r = <-light // the light key is served first: its V is lower
		must(t, r.err)
		r.p.Release()
		for _, ch := range heavy[:2] {
			r := <-ch
			must(t, r.err)
			r.p.Release()
		}
		must(t, s.Close(t.Context()))
	})
}

func TestMaxQueuedPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, DefaultKey: KeyPolicy{MaxQueued: 1}}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x", FairnessKey: "k"})
		must(t, err)
		ch := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "y", FairnessKey: "k"})
		synctest.Wait()
		_, err = s.Acquire(t.Context(), Request{Type: "fg", JobID: "z", FairnessKey: "k"})
		var rej *RejectedError
		if !errors.As(err, &rej) || !rej.PerKey || !errors.Is(err, ErrQueueFull) || rej.RetryAfter <= 0 {
			t.Fatalf("second queued request of the key: %v", err)
		}
		other := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "z", FairnessKey: "other"})
		synctest.Wait()
		p.Release()
		for _, c := range []<-chan result{ch, other} {
			r := <-c
			must(t, r.err)
			r.p.Release()
		}
		must(t, s.Close(t.Context()))
	})
}

// TestKeyCapDoesNotBlockOthers: a key at MaxInFlight waits without holding
// back other keys queued behind it.
func TestKeyCapDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 3, Keys: map[string]KeyPolicy{"capped": {MaxInFlight: 1}}}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "capped"})
		must(t, err)
		capped := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "capped"})
		synctest.Wait()
		r, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "c", FairnessKey: "free"})
		must(t, err) // admitted at once although "capped" queued first
		checkInvariants(t, s)
		if q := s.Snapshot().Queue; len(q) != 1 || q[0].BlockedBy != "key cap" {
			t.Fatalf("queue = %+v", q)
		}
		r.Release()
		p.Release()
		c := <-capped
		must(t, c.err)
		c.p.Release()
		must(t, s.Close(t.Context()))
	})
}

// TestConflictNoHeadOfLineBlocking: a job waiting on a held resource holds
// no seat and does not delay a younger job on another resource.
func TestConflictNoHeadOfLineBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 2}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "linux", FairnessKey: "a"})
		must(t, err)
		blocked := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "linux", FairnessKey: "b"})
		synctest.Wait()
		q, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "git", FairnessKey: "b"})
		must(t, err)
		checkInvariants(t, s)
		if snap := s.Snapshot(); snap.InUse != 2 || len(snap.Queue) != 1 || snap.Queue[0].BlockedBy != "conflict" {
			t.Fatalf("snapshot %+v", snap)
		}
		q.Release()
		select {
		case r := <-blocked:
			t.Fatalf("conflicting job admitted while linux is held: %+v", r)
		default:
		}
		p.Release()
		r := <-blocked
		must(t, r.err)
		r.p.Release()
		must(t, s.Close(t.Context()))
	})
}

// TestDoubleReleasePanics: a second Release panics, also after the job record
// behind the permit was reused by a later Acquire — and the stale handle does
// not release the new holder's seat.
func TestDoubleReleasePanics(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	p, err := s.Acquire(t.Context(), Request{Type: "fg"})
	must(t, err)
	p.Release()
	p2, err := s.Acquire(t.Context(), Request{Type: "fg"})
	must(t, err)
	if p2.j != p.j {
		t.Log("record not reused; the stale-handle case is not exercised")
	}
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "released twice") {
				t.Fatalf("second Release: recover() = %v", v)
			}
		}()
		p.Release()
	}()
	if snap := s.Snapshot(); snap.InUse != 1 {
		t.Fatalf("stale Release freed the new holder's seat: %d in use", snap.InUse)
	}
	p2.Release()
	must(t, s.Close(t.Context()))
}

// TestRunSyncPanic: a panicking job releases its seat and the panic reaches
// the caller.
func TestRunSyncPanic(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recover() = %v, want boom", v)
			}
		}()
		_ = s.RunSync(t.Context(), "fg", "r", "k", func(context.Context) error { panic("boom") })
	}()
	checkInvariants(t, s)
	if snap := s.Snapshot(); snap.InUse != 0 {
		t.Fatalf("seat leaked: %+v", snap)
	}
	must(t, s.Close(t.Context()))
}

// TestSubmitPanicAndError: a background job's panic or error is counted and
// its seat released.
func TestSubmitPanicAndError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		must(t, s.Submit("bg", "a", func(context.Context) error { panic("boom") }))
		must(t, s.Submit("bg", "b", func(context.Context) error { return errors.New("failed") }))
		must(t, s.Close(t.Context()))
		checkInvariants(t, s)
		if c := s.Snapshot().Counters; c.Failed != 2 || c.Completed != 2 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// TestClose: queued foreground fails at once, queued background drains, new
// calls fail, and a second Close waits and returns ErrClosed.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		waiter := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k"})
		var mu sync.Mutex
		ran := 0
		for i := range 3 {
			must(t, s.Submit("bg", fmt.Sprint(i), func(ctx context.Context) error {
				time.Sleep(time.Second)
				mu.Lock()
				ran++
				mu.Unlock()
				return nil
			}))
		}
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- s.Close(context.Background()) }()
		if r := <-waiter; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("queued foreground at Close: %v", r.err)
		}
		if _, err := s.Acquire(t.Context(), Request{Type: "fg"}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Acquire after Close: %v", err)
		}
		if err := s.Submit("bg", "x", func(context.Context) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("Submit after Close: %v", err)
		}
		p.Release() // the foreground seat frees; background drains
		must(t, <-closed)
		if ran != 3 {
			t.Fatalf("%d of 3 background jobs ran", ran)
		}
		if err := s.Close(t.Context()); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Close: %v", err)
		}
		checkInvariants(t, s)
	})
}

// TestCloseDeadline: when Close's context ends, queued background jobs are
// dropped and reported, running ones are cancelled and waited for.
func TestCloseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		cancelled := make(chan error, 1)
		must(t, s.Submit("bg", "long", func(ctx context.Context) error {
			<-ctx.Done()
			cancelled <- ctx.Err()
			return ctx.Err()
		}))
		for i := range 2 {
			must(t, s.Submit("bg", fmt.Sprint(i), func(context.Context) error { return nil }))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 queued background jobs dropped") {
			t.Fatalf("Close = %v", err)
		}
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("running job's ctx: %v", err)
		}
		checkInvariants(t, s)
		if c := s.Snapshot().Counters; c.Dropped != 2 || c.Failed != 1 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// TestUncontendedAllocatesOnlyThePermit: an admission with a free seat
// allocates its Permit and nothing else (issue 19's one allocation; the
// scheduler's records come from free lists). A count, not a time, so it
// holds under -race and on any machine.
func TestUncontendedAllocatesOnlyThePermit(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 4}, JobTypeConfig{}, JobTypeConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := Request{Type: "fg", JobID: "linux", FairnessKey: "client"}
	n := testing.AllocsPerRun(1000, func() {
		p, err := s.Acquire(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	})
	if n != 1 {
		t.Errorf("Acquire and Release allocate %v times, want 1 (the Permit)", n)
	}
	must(t, s.Close(t.Context()))
}

// TestCloseCancelsRunSync: once background work has drained, Close
// cancels the context of a RunSync still running (its caller's context is
// untouched) and does not wait for it; a Permit from Acquire is not
// cancelled, and may be released after Close.
func TestCloseCancelsRunSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 2}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "held", FairnessKey: "k"})
		must(t, err)
		caller, stop := context.WithCancel(t.Context())
		defer stop()
		started, proceed := make(chan struct{}), make(chan struct{})
		ran := make(chan error, 1)
		go func() {
			ran <- s.RunSync(caller, "fg", "sync", "k", func(ctx context.Context) error {
				close(started)
				<-ctx.Done()
				<-proceed // still running when Close returns
				return ctx.Err()
			})
		}()
		<-started
		must(t, s.Close(context.Background()))
		synctest.Wait()
		if err := caller.Err(); err != nil {
			t.Fatalf("Close cancelled the caller's own context: %v", err)
		}
		select {
		case err := <-ran:
			t.Fatalf("RunSync returned before its fn did: %v", err)
		default:
		}
		close(proceed)
		if err := <-ran; !errors.Is(err, context.Canceled) {
			t.Fatalf("RunSync = %v, want its fn's context.Canceled", err)
		}
		if snap := s.Snapshot(); snap.InUse != 1 {
			t.Fatalf("%d seats in use after RunSync returned, want the Permit's 1", snap.InUse)
		}
		p.Release()
		if snap := s.Snapshot(); snap.InUse != 0 {
			t.Fatalf("%d seats in use after the Permit's release", snap.InUse)
		}
		checkInvariants(t, s)
	})
}

// TestHostileIdentifiers: huge fairness keys and job IDs are folded to a
// bounded digest; distinct values stay distinct and equal values conflict.
func TestHostileIdentifiers(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 4}, JobTypeConfig{}, JobTypeConfig{})
	huge := strings.Repeat("k", 1<<20)
	id := strings.Repeat("\xff", 10000) // invalid UTF-8
	p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: id, FairnessKey: huge})
	must(t, err)
	p2, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "other", FairnessKey: huge + "x"})
	must(t, err)
	snap := s.Snapshot()
	if len(snap.Keys) != 2 {
		t.Fatalf("keys %+v", snap.Keys)
	}
	for _, k := range snap.Keys {
		if len(k.Key) > MaxIdentifierLen || !strings.HasPrefix(k.Key, "sha256:") {
			t.Errorf("key of %d bytes stored as %q", len(huge), k.Key)
		}
	}
	// The same huge job ID still conflicts with itself.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx, Request{Type: "fg", JobID: id, FairnessKey: "b"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("conflicting huge job ID admitted: %v", err)
	}
	p.Release()
	p2.Release()
	checkInvariants(t, s)
	must(t, s.Close(t.Context()))
}

// TestConflictWaiterCancelledAfterRelease: two requests of one caller wait
// on a held repository. When it is released, the older returns to the queue
// and the other stays parked; if the returned one is cancelled before it
// runs, the other must take its place instead of waiting on a resource
// nobody holds.
func TestConflictWaiterCancelledAfterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 3, Keys: map[string]KeyPolicy{"b": {MaxInFlight: 1}}}, JobTypeConfig{}, JobTypeConfig{})
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "linux", FairnessKey: "a"})
		must(t, err)
		ctx1, cancel1 := context.WithCancel(t.Context())
		w1 := acquireAsync(ctx1, s, Request{Type: "fg", JobID: "linux", FairnessKey: "b"})
		synctest.Wait()
		w2 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "linux", FairnessKey: "b"})
		synctest.Wait()
		// b's other request takes b's only slot, so the waiter returned by
		// the release cannot run yet.
		other, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "git", FairnessKey: "b"})
		must(t, err)
		holder.Release()
		checkInvariants(t, s)
		cancel1() // the returned waiter gives up before it ran
		if r := <-w1; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("w1 = %v", r.err)
		}
		checkInvariants(t, s)
		other.Release()
		r := <-w2
		must(t, r.err)
		r.p.Release()
		must(t, s.Close(t.Context()))
	})
}
