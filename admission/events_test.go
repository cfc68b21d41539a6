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

// eventLog collects delivered events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) handle(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// take returns the events delivered so far (after synctest.Wait) and
// forgets them.
func (l *eventLog) take() []Event {
	synctest.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// brief renders events compactly for comparison.
func brief(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case EventAllocationChanged:
			fmt.Fprintf(&b, "%v %s %g->%g %s; ", e.Kind, e.Key, e.Previous, e.New, e.Reason)
		case EventAged, EventUrgent:
			fmt.Fprintf(&b, "%v %s/%s %d->%d x%d %v; ", e.Kind, e.Type, e.JobID, e.BasePriority, e.EffectivePriority, e.Promotions, e.Wait)
		case EventOverflow:
			fmt.Fprintf(&b, "%v %d; ", e.Kind, e.Dropped)
		default:
			fmt.Fprintf(&b, "%v %s/%s key=%q wait=%v err=%v; ", e.Kind, e.Type, e.JobID, e.Key, e.Wait, e.Err)
		}
	}
	return b.String()
}

func wantDelivered(t *testing.T, got []Event, want string) {
	t.Helper()
	if g := brief(got); g != want {
		t.Errorf("events:\n got %s\nwant %s", g, want)
	}
}

// TestEventsAgedUrgent: a job admitted after promotions reports aged, and
// urgent when it became urgent.
func TestEventsAgedUrgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		cfg := Config{Capacity: 1, Aging: &AgingConfig{Interval: time.Second, Step: 10, Urgent: 40}}
		s := newOTelScheduler(t, cfg, JobTypeConfig{Priority: 20}, JobTypeConfig{}, WithEventHandler(log.handle))
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		done := make(chan struct{})
		must(t, s.Submit("bg", "r", func(context.Context) error { close(done); return nil }))
		time.Sleep(3500 * time.Millisecond)
		holder.Release()
		<-done
		wantDelivered(t, log.take(), "aged bg/r 10->40 x3 3.5s; urgent bg/r 10->40 x3 3.5s; ")
		// One promotion, not urgent.
		holder, err = s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		ch := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k2"})
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond)
		holder.Release()
		(<-ch).p.Release()
		wantDelivered(t, log.take(), "aged fg/b 20->30 x1 1.5s; ")
		must(t, s.Close(t.Context()))
	})
}

// TestEventsRejectedShed: rejections at arrival, push-out, wait timeout and
// Close.
func TestEventsRejectedShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		cfg := Config{Capacity: 1, MaxQueue: 2, DefaultKey: KeyPolicy{MaxQueued: 2}}
		s := newOTelScheduler(t, cfg, JobTypeConfig{MaxWait: 10 * time.Second}, JobTypeConfig{}, WithEventHandler(log.handle))
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "h"})
		must(t, err)
		w1 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "heavy"})
		synctest.Wait()
		w2 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "c", FairnessKey: "heavy"})
		synctest.Wait()
		time.Sleep(time.Second)
		// Full: heavy is the longest queue, so its own arrival is refused.
		if _, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "d", FairnessKey: "heavy"}); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("err = %v", err)
		}
		// A light key pushes out heavy's newest.
		w3 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "e", FairnessKey: "light"})
		synctest.Wait()
		if r := <-w2; !errors.Is(r.err, ErrQueueFull) {
			t.Fatalf("w2: %v", r.err)
		}
		wantDelivered(t, log.take(), `rejected fg/d key="heavy" wait=0s err=admission: queue full (job type "fg", caller limit); `+
			`shed fg/c key="heavy" wait=1s err=admission: queue full (job type "fg", caller limit; retry after 1s); `)
		time.Sleep(9 * time.Second) // b (queued at 0) times out at 10s
		if r := <-w1; !errors.Is(r.err, ErrWaitTimeout) {
			t.Fatalf("w1: %v", r.err)
		}
		wantDelivered(t, log.take(), `rejected fg/b key="heavy" wait=10s err=admission: wait timeout (job type "fg", server limit); `)
		must(t, s.Close(t.Context())) // e is still queued
		if r := <-w3; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("w3: %v", r.err)
		}
		wantDelivered(t, log.take(), `rejected fg/e key="light" wait=9s err=admission: scheduler closed (job type "fg", server limit); `)
		holder.Release()
		if _, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "f", FairnessKey: "x"}); !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
		// After Close events are dropped and counted.
		if got := log.take(); len(got) != 0 {
			t.Errorf("events after Close: %s", brief(got))
		}
		if n := s.Snapshot().Counters.EventsDropped; n != 1 {
			t.Errorf("EventsDropped = %d, want 1", n)
		}
	})
}

// TestEventsBackground: failed, expired and dropped background jobs.
func TestEventsBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{MaxWait: 5 * time.Second}, WithEventHandler(log.handle))
		boom := errors.New("boom")
		must(t, s.Submit("bg", "x", func(context.Context) error { time.Sleep(time.Second); return boom }))
		must(t, s.Submit("bg", "y", func(context.Context) error { return nil }))
		time.Sleep(time.Second)
		synctest.Wait()
		// x failed after 1s; y ran.
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		must(t, s.Submit("bg", "z", func(context.Context) error { return nil }))
		time.Sleep(6 * time.Second) // z expires at 5s
		must(t, s.Submit("bg", "q", func(context.Context) error { return nil }))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_ = s.Close(ctx) // q is dropped
		holder.Release()
		evs := log.take()
		wantDelivered(t, evs, `background_failed bg/x key="" wait=0s err=boom; `+
			`background_expired bg/z key="" wait=5s err=admission: wait timeout (job type "bg", server limit; retry after 1ms); `+
			`background_dropped bg/q key="" wait=0s err=admission: scheduler closed: dropped by Close: context canceled; `)
		if len(evs) == 3 && (evs[0].Foreground || evs[0].Err != boom) {
			t.Errorf("failed event %+v", evs[0])
		}
	})
}

// TestEventsRetryWait: a retried job that expires in the queue reports the
// wait of its new arrival, not one measured from its failed run's start
// (which came out negative).
func TestEventsRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{},
			JobTypeConfig{MaxWait: 5 * time.Second, Retry: RetryPolicy{MaxAttempts: 2, Initial: time.Second}}, WithEventHandler(log.handle))
		boom := errors.New("boom")
		must(t, s.Submit("bg", "x", func(context.Context) error { time.Sleep(time.Second); return Retryable(boom) }))
		time.Sleep(time.Second)
		synctest.Wait()
		// x failed at 1s and is queued again at 2s, behind the holder.
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		time.Sleep(10 * time.Second) // x expires at 7s
		holder.Release()
		must(t, s.Close(t.Context()))
		var expired []Event
		for _, e := range log.take() {
			if e.Kind == EventBackgroundExpired {
				expired = append(expired, e)
			}
		}
		if len(expired) != 1 || expired[0].Wait != 5*time.Second {
			t.Fatalf("expired events %+v, want one with wait 5s", expired)
		}
	})
}

// TestEventsAllocation: allocation changes of configured keys and "other".
func TestEventsAllocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		cfg := Config{Capacity: 4, Keys: map[string]KeyPolicy{"gold": {Weight: 3}}}
		s := newOTelScheduler(t, cfg, JobTypeConfig{}, JobTypeConfig{}, WithEventHandler(log.handle))
		acq := func(key string) *Permit {
			p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: key, FairnessKey: key})
			must(t, err)
			return p
		}
		g := acq("gold")
		wantDelivered(t, log.take(), "allocation_changed gold 0->4 key_activated; ")
		x := acq("x")
		wantDelivered(t, log.take(), "allocation_changed gold 4->3 rebalance; allocation_changed other 0->1 key_activated; ")
		y := acq("y") // "other" was already active: not reported (see the package doc)
		wantDelivered(t, log.take(), "")
		x.Release()
		y.Release()
		wantDelivered(t, log.take(), "allocation_changed gold 3->4 rebalance; allocation_changed other 1->0 key_drained; ")
		g.Release()
		wantDelivered(t, log.take(), "allocation_changed gold 4->0 key_drained; ")
		must(t, s.Close(t.Context()))
	})
}

// TestEventsSlowHandler: a blocked handler never stalls admission; what
// does not fit in the buffer is dropped, counted, and announced by an
// overflow event once the handler catches up.
func TestEventsSlowHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		release := make(chan struct{})
		first := true
		handler := func(e Event) {
			if first {
				first = false
				<-release
			}
			log.handle(e)
		}
		cfg := Config{Capacity: 1, MaxQueue: 1}
		s := newOTelScheduler(t, cfg, JobTypeConfig{}, JobTypeConfig{}, WithEventHandler(handler))
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		w := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k"})
		synctest.Wait()
		reject := func() {
			if _, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "c", FairnessKey: "k"}); !errors.Is(err, ErrQueueFull) {
				t.Fatalf("err = %v", err)
			}
		}
		reject()
		synctest.Wait() // the handler holds the first event and blocks
		const extra = 100
		for range EventBuffer + extra {
			reject()
		}
		if n := s.Snapshot().Counters.EventsDropped; n != extra {
			t.Fatalf("EventsDropped = %d, want %d", n, extra)
		}
		close(release)
		synctest.Wait()
		reject() // room again: the overflow report goes first
		evs := log.take()
		if len(evs) != 1+EventBuffer+2 {
			t.Fatalf("%d events delivered, want %d", len(evs), 1+EventBuffer+2)
		}
		if o := evs[len(evs)-2]; o.Kind != EventOverflow || o.Dropped != extra {
			t.Errorf("before the last event: %+v, want an overflow of %d", o, extra)
		}
		if last := evs[len(evs)-1]; last.Kind != EventRejected {
			t.Errorf("last event %v", last.Kind)
		}
		holder.Release()
		(<-w).p.Release()
		must(t, s.Close(t.Context()))
	})
}

// TestEventsHandlerPanics: a panicking handler is recovered; later events
// are still delivered.
func TestEventsHandlerPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		n := 0
		s := newOTelScheduler(t, Config{Capacity: 1, MaxQueue: 1}, JobTypeConfig{}, JobTypeConfig{}, WithEventHandler(func(e Event) {
			n++
			if n == 1 {
				panic("handler bug")
			}
			log.handle(e)
		}))
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		w := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k"})
		synctest.Wait()
		for range 2 {
			if _, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "c", FairnessKey: "k"}); !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
		}
		if evs := log.take(); len(evs) != 1 {
			t.Errorf("%d events after a panic, want 1", len(evs))
		}
		holder.Release()
		(<-w).p.Release()
		must(t, s.Close(t.Context()))
	})
}

// TestEventsNoHandlerNoGoroutine: without a handler no goroutine starts
// (goleak in TestMain would also see one left behind).
func TestEventsNoHandlerNoGoroutine(t *testing.T) {
	s := newOTelScheduler(t, Config{Capacity: 1, MaxQueue: 1}, JobTypeConfig{}, JobTypeConfig{})
	must(t, s.RunSync(t.Context(), "fg", "a", "k", func(context.Context) error { return nil }))
	s.mu.Lock()
	started := s.obs.events.ch != nil
	s.mu.Unlock()
	if started {
		t.Error("event goroutine started without a handler")
	}
	must(t, s.Close(t.Context()))
}
