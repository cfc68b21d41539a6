package admission

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// blockingHandler is a slog.Handler whose Handle blocks, for records whose
// message contains match, until release is closed; entered is closed when
// the first such record arrives.
type blockingHandler struct {
	match   string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler            { return h }
func (h *blockingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return nil
}

// TestCloseWaitsForTimerFunctions: a background job's TTL expires and its
// timer function is still reporting it (here: blocked in the logger) when
// Close is called. Close must not return before that function has
// finished, or scheduler code would run after Close returned (DESIGN §6:
// every goroutine the scheduler started has exited when Close returns).
func TestCloseWaitsForTimerFunctions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{match: "did not run", entered: make(chan struct{}), release: make(chan struct{})}
		s, err := New(Config{Capacity: 1}, WithLogger(slog.New(h)))
		must(t, err)
		must(t, s.RegisterType("fg", JobTypeConfig{Priority: PriorityForeground}))
		must(t, s.RegisterType("bg", JobTypeConfig{Priority: PriorityBackground, MaxWait: time.Second}))
		p, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "k"})
		must(t, err)
		must(t, s.Submit("bg", "x", func(context.Context) error { return nil })) // queued behind p
		time.Sleep(time.Second)                                                  // its TTL ends: the timer reports it
		<-h.entered
		p.Release()
		closed := make(chan error, 1)
		go func() { closed <- s.Close(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a timer function was still reporting an expired job", err)
		default:
		}
		close(h.release)
		must(t, <-closed)
		if c := s.Snapshot().Counters; c.Expired != 1 {
			t.Errorf("Expired = %d, want 1", c.Expired)
		}
	})
}

// TestPressureSourcePanics: a PressureSource that panics is read under the
// scheduler's lock; the panic must not leave the lock held. Its reading
// counts as no pressure and is counted.
func TestPressureSourcePanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := PressureFunc(func() float64 { panic("sensor broken") })
		s := newTestScheduler(t, Config{Capacity: 1, Pressure: &PressureConfig{Source: src, Threshold: 0.5, MinPriority: PriorityBackground}},
			JobTypeConfig{}, JobTypeConfig{})
		var rec recorder
		must(t, s.Submit("bg", "x", rec.job("x", 0))) // read at arrival: panics, counts as no pressure
		synctest.Wait()
		wantRan(t, &rec, "x")
		time.Sleep(DefaultPressureInterval)
		p, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "k"}) // read again: the lock was not left held
		must(t, err)
		p.Release()
		if c := s.Snapshot().Counters; c.PressureFailures < 2 {
			t.Errorf("PressureFailures = %d, want at least 2", c.PressureFailures)
		}
		must(t, s.Close(t.Context()))
	})
}
