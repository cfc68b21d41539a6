package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder collects the job IDs background jobs ran with, in order.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) job(id string, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		r.mu.Lock()
		r.ran = append(r.ran, id)
		r.mu.Unlock()
		time.Sleep(d)
		return nil
	}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

func wantRan(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	if got := r.got(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ran %q, want %q", got, want)
	}
}

func TestPauseType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 2, Aging: &AgingConfig{Interval: time.Second}}, JobTypeConfig{}, JobTypeConfig{})
		var rec recorder
		must(t, s.Pause("bg", 0))
		must(t, s.Submit("bg", "a", rec.job("a", time.Second)))
		time.Sleep(time.Hour)
		synctest.Wait()
		wantRan(t, &rec)
		// The paused type's seats go to other work.
		p1, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x"})
		must(t, err)
		p2, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "y"})
		must(t, err)
		snap := s.Snapshot()
		if len(snap.Queue) != 1 || snap.Queue[0].BlockedBy != "paused" || snap.Queue[0].EffectivePriority != PriorityBackground {
			t.Fatalf("queue while paused = %+v; want the job blocked by the pause, not aged", snap.Queue)
		}
		p1.Release()
		p2.Release()
		checkInvariants(t, s)
		time.Sleep(3 * time.Second)
		must(t, s.Resume("bg"))
		synctest.Wait()
		wantRan(t, &rec, "a")
		if c := s.Snapshot().Counters; c.AgingPromotions != 0 {
			t.Errorf("promotions = %d; the hour paused must not count as waiting", c.AgingPromotions)
		}
		must(t, s.Resume("bg")) // not paused: no-op
		must(t, s.Close(t.Context()))
	})
}

// TestPauseFreezesAging: a job's aging clock stands still while its type
// is paused and runs on from where it stopped after the resume. In "stale
// reading" the resume's caller read the clock 3 s before the pause's
// section ran (a caller reads it before taking the lock, and may wait for
// the lock or be descheduled in between): lockAt moves the reading up to
// the pause's instant, so the thaw adds nothing to the job's age. (Taken
// as it was, the thaw moved the aging clock back 3 s: three promotions the
// job never waited for; in a loaded soak, urgency past its tier cap before
// its starvation bound.)
func TestPauseFreezesAging(t *testing.T) {
	for _, tc := range []struct {
		name   string
		paused time.Duration
		resume func(s *Scheduler) error
	}{
		{"Resume", time.Minute, func(s *Scheduler) error { return s.Resume("bg") }},
		{"stale reading", 0, func(s *Scheduler) error {
			now := s.lockAt(s.now() - int64(3*time.Second))
			s.resumeTypeLocked(s.types["bg"], now)
			s.mu.Unlock()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newTestScheduler(t, Config{Capacity: 1, Aging: &AgingConfig{Interval: time.Second}}, JobTypeConfig{}, JobTypeConfig{})
				holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x"})
				must(t, err)
				must(t, s.Submit("bg", "a", func(context.Context) error { return nil }))
				time.Sleep(5 * time.Second)
				must(t, s.Pause("bg", 0))
				time.Sleep(tc.paused)
				if q := s.Snapshot().Queue; q[0].EffectivePriority != PriorityBackground+5 {
					t.Fatalf("while paused: effective %d, want %d (clock stopped at 5s)", q[0].EffectivePriority, PriorityBackground+5)
				}
				must(t, tc.resume(s))
				time.Sleep(2 * time.Second)
				if q := s.Snapshot().Queue; q[0].EffectivePriority != PriorityBackground+7 {
					t.Fatalf("after resume: effective %d, want %d (7s queued unpaused)", q[0].EffectivePriority, PriorityBackground+7)
				}
				checkInvariants(t, s)
				holder.Release()
				must(t, s.Close(t.Context()))
			})
		})
	}
}

func TestPauseDeadlineAndTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		var rec recorder
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x"})
		must(t, err)
		must(t, s.SubmitWith(t.Context(), "bg", "ttl", rec.job("ttl", 0), WithTTL(5*time.Second)))
		time.Sleep(time.Second)
		must(t, s.Pause("bg", 10*time.Second)) // lifts itself at t=11s
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if c := s.Snapshot().Counters; c.Expired != 0 {
			t.Fatalf("expired while paused: %+v", c)
		}
		time.Sleep(time.Second + 3*time.Second) // pause lifted at 11s; 4s of TTL were left
		synctest.Wait()
		if c := s.Snapshot().Counters; c.Expired != 0 || s.Snapshot().Queued != 1 {
			t.Fatalf("expired before its TTL, counted while paused: %+v", c)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if c := s.Snapshot().Counters; c.Expired != 1 || c.RejectedWaitTimeout != 1 {
			t.Fatalf("counters after TTL = %+v, want one expiry", c)
		}
		wantRan(t, &rec)
		holder.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestPauseKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{ConflictGroup: "-"}, JobTypeConfig{})
		must(t, s.PauseKey("a", 0))
		wa := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "1", FairnessKey: "a"})
		synctest.Wait()
		pb, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "2", FairnessKey: "b"})
		must(t, err) // a is paused: its seat goes to b
		// b runs up virtual time while a waits paused.
		time.Sleep(10 * time.Second)
		pb.Release()
		select {
		case r := <-wa:
			t.Fatalf("paused key admitted: %v", r.err)
		default:
		}
		checkInvariants(t, s)
		s.ResumeKey("a")
		r := <-wa
		must(t, r.err)
		s.mu.Lock()
		va, vsys := s.activeKeyLocked("a").v, s.vsys
		s.mu.Unlock()
		if va < vsys-1 { // charged its 1s estimate from V_sys, not from 0
			t.Errorf("resumed key's V = %v, V_sys %v: it should restart at V_sys", va, vsys)
		}
		r.p.Release()
		s.ResumeKey("never-paused")
		must(t, s.Close(t.Context()))
	})
}

func TestCloseDropsPausedBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		must(t, s.Pause("bg", time.Hour))
		for _, id := range []string{"a", "b"} {
			must(t, s.Submit("bg", id, func(context.Context) error { return nil }))
		}
		must(t, s.Close(context.Background())) // does not hang on work that cannot run
		if c := s.Snapshot().Counters; c.Dropped != 2 || c.Submitted != 2 {
			t.Fatalf("counters = %+v, want both paused jobs dropped", c)
		}
		if err := s.Pause("bg", 0); !errors.Is(err, ErrClosed) {
			t.Errorf("Pause after Close = %v", err)
		}
		if err := s.PauseKey("k", 0); !errors.Is(err, ErrClosed) {
			t.Errorf("PauseKey after Close = %v", err)
		}
	})
}

func TestControlErrors(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 4, Keys: map[string]KeyPolicy{"a": {MinSeats: 2}}}, JobTypeConfig{}, JobTypeConfig{})
	for name, err := range map[string]error{
		"Pause negative":    s.Pause("bg", -1),
		"Pause unknown":     s.Pause("nope", 0),
		"Resume unknown":    s.Resume("nope"),
		"PauseKey negative": s.PauseKey("a", -time.Second),
		"SetCapacity 0":     s.SetCapacity(0),
		"SetCapacity<min":   s.SetCapacity(1),
		"SetTypeLimit -1":   s.SetTypeLimit("fg", -1),
		"SetTypeLimit nope": s.SetTypeLimit("nope", 1),
		"SetWeight 0":       s.SetWeight("a", 0),
		"SetKeyPolicy min":  s.SetKeyPolicy("b", KeyPolicy{MinSeats: 3}),
		"SetKeyPolicy bad":  s.SetKeyPolicy("b", KeyPolicy{MaxQueued: -1}),
		"SubmitWith ttl":    s.SubmitWith(t.Context(), "bg", "x", func(context.Context) error { return nil }, WithTTL(-1)),
		//lint:ignore SA1012 the nil is the test
		"SubmitWith nil ctx": s.SubmitWith(nil, "bg", "x", func(context.Context) error { return nil }),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrUnknownJobType) {
			t.Errorf("%s: %v, want ErrInvalidConfig or ErrUnknownJobType", name, err)
		}
	}
	must(t, s.Close(t.Context()))
}

func TestSetCapacityAndTypeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{ConflictGroup: "-"}, JobTypeConfig{})
		p1, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "1"})
		must(t, err)
		w2 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "2"})
		synctest.Wait()
		must(t, s.SetCapacity(2))
		r2 := <-w2
		must(t, r2.err)
		// Shrinking pre-empts nothing; the next job waits until both left.
		must(t, s.SetCapacity(1))
		checkInvariants(t, s)
		w3 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "3"})
		synctest.Wait()
		p1.Release()
		synctest.Wait()
		select {
		case <-w3:
			t.Fatal("admitted above the shrunk capacity")
		default:
		}
		r2.p.Release()
		r3 := <-w3
		must(t, r3.err)

		// A type limit: capacity 3, fg limited to 1 at runtime.
		must(t, s.SetCapacity(3))
		must(t, s.SetTypeLimit("fg", 1))
		w4 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "4"})
		synctest.Wait()
		if q := s.Snapshot().Queue; len(q) != 1 || q[0].BlockedBy != "type cap" {
			t.Fatalf("queue = %+v, want job 4 held by the type cap", q)
		}
		must(t, s.SetTypeLimit("fg", 0))
		r4 := <-w4
		must(t, r4.err)
		must(t, s.RegisterType("fg", JobTypeConfig{ConflictGroup: "-", Priority: PriorityForeground})) // registered config unchanged
		r3.p.Release()
		r4.p.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestSetWeightAndKeyPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 4}, JobTypeConfig{ConflictGroup: "-"}, JobTypeConfig{})
		must(t, s.SetWeight("a", 4))
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "1", FairnessKey: "a"})
		must(t, err)
		if k := s.Snapshot().Keys[0]; k.Weight != 4 || !near(k.VirtualTime, 0.25) {
			t.Fatalf("key a = %+v, want weight 4 and V = 1s/4", k)
		}
		s.ResetWeights()
		if k := s.Snapshot().Keys[0]; k.Weight != 1 {
			t.Fatalf("after ResetWeights weight = %v", k.Weight)
		}
		// MaxInFlight set at runtime caps the key; raising it admits.
		must(t, s.SetKeyPolicy("a", KeyPolicy{MaxInFlight: 1, Weight: 2}))
		w := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "2", FairnessKey: "a"})
		synctest.Wait()
		snap := s.Snapshot()
		if len(snap.Queue) != 1 || snap.Queue[0].BlockedBy != "key cap" || snap.Keys[0].Weight != 2 {
			t.Fatalf("snapshot = %+v / %+v, want a capped with weight 2", snap.Queue, snap.Keys)
		}
		must(t, s.SetKeyPolicy("a", KeyPolicy{MaxInFlight: 2}))
		r := <-w
		must(t, r.err)
		checkInvariants(t, s)
		p.Release()
		r.p.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestDuplicatePolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		must(t, s.RegisterType("repack", JobTypeConfig{Priority: 5, ConflictGroup: "git", Duplicates: Coalesce}))
		must(t, s.RegisterType("gc", JobTypeConfig{Priority: 5, ConflictGroup: "git", Duplicates: Supersede}))
		var rec recorder
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "other"})
		must(t, err)
		for i := range 50 {
			must(t, s.Submit("repack", "linux", rec.job("repack#"+string(rune('0'+i%10)), time.Second)))
		}
		must(t, s.Submit("gc", "linux", rec.job("gc-old", time.Second)))
		time.Sleep(time.Second)
		must(t, s.Submit("gc", "linux", rec.job("gc-new", time.Second)))
		snap := s.Snapshot()
		if snap.Queued != 2 || snap.Counters.Coalesced != 49 || snap.Counters.Superseded != 1 {
			t.Fatalf("queued %d, counters %+v; want one repack and one gc queued", snap.Queued, snap.Counters)
		}
		for _, q := range snap.Queue {
			if q.Type == "gc" && q.Wait != 0 {
				t.Errorf("superseding gc waited %v: its clock must restart", q.Wait)
			}
		}
		checkInvariants(t, s)
		holder.Release()
		synctest.Wait()
		time.Sleep(3 * time.Second)
		wantRan(t, &rec, "repack#0", "gc-new")
		// Once the first ran, a new submission queues again.
		must(t, s.Submit("repack", "linux", rec.job("again", 0)))
		synctest.Wait()
		wantRan(t, &rec, "repack#0", "gc-new", "again")
		must(t, s.Close(t.Context()))
	})
}

// TestRetryDefaults: a RetryPolicy with MaxAttempts only backs off from
// 1s, doubling, up to a ceiling of 1m, and stops at MaxAttempts.
func TestRetryDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 1})
		must(t, err)
		must(t, s.RegisterType("pull", JobTypeConfig{Priority: 5, Retry: RetryPolicy{MaxAttempts: 9}}))
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		must(t, s.Submit("pull", "linux", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			return Retryable(errors.New("remote busy"))
		}))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{0, 1, 3, 7, 15, 31, 63, 123, 183} // backoffs 1, 2, 4, ..., 32, then 60, 60
		for i := range want {
			want[i] *= time.Second
		}
		if !slices.Equal(at, want) {
			t.Errorf("attempts at %v, want %v", at, want)
		}
		must(t, s.Close(t.Context()))
	})
}

func TestRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: time.Second}})
		must(t, err)
		must(t, s.RegisterType("pull", JobTypeConfig{Priority: 5, Retry: RetryPolicy{MaxAttempts: 3, Initial: time.Second}}))
		must(t, s.RegisterType("fg", JobTypeConfig{Priority: 40}))
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		fail := errors.New("remote busy")
		must(t, s.Submit("pull", "linux", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			return Retryable(fail)
		}))
		synctest.Wait()
		time.Sleep(time.Second) // first retry runs at 1s
		synctest.Wait()
		// Hold the seat so the second retry (due at 1s + 2s) has to queue.
		holder, err := s.Acquire(t.Context(), Request{Type: "fg"})
		must(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		q := s.Snapshot().Queue
		if len(q) != 1 || q[0].EffectivePriority != 5+3 {
			t.Fatalf("queued retry = %+v, want its aging clock running from the first submission (3 promotions)", q)
		}
		holder.Release()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		if len(at) != 3 || at[0] != 0 || at[1] != time.Second || at[2] != 3*time.Second {
			t.Errorf("attempts at %v, want [0s 1s 3s] and no fourth", at)
		}
		mu.Unlock()
		c := s.Snapshot().Counters
		if c.Retried != 2 || c.Failed != 3 || c.Completed != 4 || c.Submitted != 4 { // 3 attempts and the holder
			t.Errorf("counters = %+v", c)
		}
		// A plain error is not retried; a retry pending at Close is dropped.
		must(t, s.Submit("pull", "plain", func(context.Context) error { return fail }))
		must(t, s.Submit("pull", "pending", func(context.Context) error { return Retryable(fail) }))
		synctest.Wait()
		must(t, s.Close(t.Context()))
		if c := s.Snapshot().Counters; c.Retried != 3 || c.Dropped != 1 {
			t.Errorf("after Close counters = %+v, want one more retry scheduled and then dropped", c)
		}
		if !IsRetryable(Retryable(fail)) || IsRetryable(fail) || Retryable(nil) != nil {
			t.Error("Retryable/IsRetryable")
		}
	})
}

func TestSubmitWithOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		var rec recorder
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "x"})
		must(t, err)
		if err := s.SubmitWith(t.Context(), "bg", "up", rec.job("up", 0), WithPriority(PriorityForeground)); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("priority crossing the foreground tier: %v", err)
		}
		type ctxKey struct{}
		ctx := context.WithValue(t.Context(), ctxKey{}, "trace")
		var sawValue bool
		must(t, s.SubmitWith(ctx, "bg", "low", rec.job("low", 0)))
		must(t, s.SubmitWith(ctx, "bg", "high", func(ctx context.Context) error {
			sawValue = ctx.Value(ctxKey{}) == "trace" && ctx.Err() == nil
			return rec.job("high", 0)(ctx)
		}, WithPriority(PriorityBackground+5), WithFairnessKey("tenant")))
		snap := s.Snapshot()
		if snap.Queue[0].JobID != "high" || snap.Queue[0].Key != "tenant" || snap.Queue[0].BasePriority != PriorityBackground+5 {
			t.Fatalf("queue = %+v, want the overridden job first, under its key", snap.Queue)
		}
		checkInvariants(t, s)
		holder.Release()
		synctest.Wait()
		wantRan(t, &rec, "high", "low")
		if !sawValue {
			t.Error("the job's context lost the submitter's values or inherited its cancellation")
		}
		must(t, s.Close(t.Context()))
	})
}

func TestSharedAccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 8})
		must(t, err)
		must(t, s.RegisterType("fetch", JobTypeConfig{Priority: 8, ConflictGroup: "git", Access: Shared}))
		must(t, s.RegisterType("repack", JobTypeConfig{Priority: 8, ConflictGroup: "git"}))
		fetch := func(id, key string) (*Permit, error) {
			return s.Acquire(t.Context(), Request{Type: "fetch", JobID: id, FairnessKey: key})
		}
		var readers []*Permit
		for _, k := range []string{"a", "b", "c"} {
			p, err := fetch("linux", k)
			must(t, err) // shared jobs run together
			readers = append(readers, p)
		}
		repack := acquireAsync(t.Context(), s, Request{Type: "repack", JobID: "linux", FairnessKey: "d"})
		synctest.Wait()
		late := acquireAsync(t.Context(), s, Request{Type: "fetch", JobID: "linux", FairnessKey: "e"})
		synctest.Wait()
		other, err := fetch("tiny", "e") // another resource is unaffected
		must(t, err)
		snap := s.Snapshot()
		if snap.InUse != 4 || len(snap.Queue) != 2 {
			t.Fatalf("in use %d, queue %+v; want the repack and the late fetch waiting", snap.InUse, snap.Queue)
		}
		checkInvariants(t, s)
		for _, p := range readers[:2] {
			p.Release()
		}
		synctest.Wait()
		select {
		case <-late:
			t.Fatal("a new shared job overtook the waiting exclusive one")
		case <-repack:
			t.Fatal("exclusive job ran beside a shared one")
		default:
		}
		readers[2].Release()
		r := <-repack
		must(t, r.err)
		checkInvariants(t, s)
		select {
		case <-late:
			t.Fatal("shared job ran beside the exclusive one")
		default:
		}
		r.p.Release()
		l := <-late
		must(t, l.err)
		l.p.Release()
		other.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestPausedExclusiveDoesNotHoldReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 8})
		must(t, err)
		must(t, s.RegisterType("fetch", JobTypeConfig{Priority: 8, ConflictGroup: "git", Access: Shared}))
		must(t, s.RegisterType("repack", JobTypeConfig{Priority: 8, ConflictGroup: "git"}))
		reader, err := s.Acquire(t.Context(), Request{Type: "fetch", JobID: "linux"})
		must(t, err)
		repack := acquireAsync(t.Context(), s, Request{Type: "repack", JobID: "linux"})
		synctest.Wait()
		late := acquireAsync(t.Context(), s, Request{Type: "fetch", JobID: "linux", FairnessKey: "x"})
		synctest.Wait()
		must(t, s.Pause("repack", 0)) // the repack no longer holds fetches back
		l := <-late
		must(t, l.err)
		checkInvariants(t, s)
		reader.Release()
		l.p.Release()
		must(t, s.Resume("repack"))
		r := <-repack
		must(t, r.err)
		r.p.Release()
		must(t, s.Close(t.Context()))
	})
}

// newShortestFirstScheduler returns a one-seat scheduler with an Order
// ShortestFirst type sf of priority prio (a = 0.1/s²) and a type "hold",
// priority 40, whose permit keeps the seat while a test queues sf jobs.
func newShortestFirstScheduler(t *testing.T, sf JobType, prio Priority) *Scheduler {
	t.Helper()
	s, err := New(Config{Capacity: 1})
	must(t, err)
	must(t, s.RegisterType(sf, JobTypeConfig{Priority: prio, Order: ShortestFirst}))
	must(t, s.RegisterType("hold", JobTypeConfig{Priority: 40}))
	return s
}

func TestShortestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShortestFirstScheduler(t, "scan", 5)
		var rec recorder
		// Learn the costs: big takes 10s, small 1s.
		must(t, s.Submit("scan", "big", rec.job("big", 10*time.Second)))
		synctest.Wait()
		time.Sleep(10 * time.Second)
		must(t, s.Submit("scan", "small", rec.job("small", time.Second)))
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()

		holder, err := s.Acquire(t.Context(), Request{Type: "hold"})
		must(t, err)
		must(t, s.Submit("scan", "big", rec.job("big", 0)))
		time.Sleep(time.Second)
		must(t, s.Submit("scan", "small", rec.job("small", 0)))
		holder.Release()
		synctest.Wait()
		// est(big) = 0.3·10 + 0.7·1 = 3.7s, est(small) = 0.3·1 + 0.7·1 = 1s
		// (EMAs seeded with the 1s default): 1/1 - 1/3.7 = 0.73 in favour of
		// small, worth 7.3s of waiting; big waited only 1s more.
		wantRan(t, &rec, "big", "small", "small", "big")

		holder, err = s.Acquire(t.Context(), Request{Type: "hold"})
		must(t, err)
		must(t, s.Submit("scan", "big", rec.job("big", 0)))
		// The zero-length runs above moved the estimates to big 0.7·3.7 =
		// 2.59s and small 0.7·1 = 0.7s: small is favoured by 1/0.7 - 1/2.59
		// = 1.04, worth 10.4s of waiting. Big waits 11s more: it goes first.
		time.Sleep(11 * time.Second)
		must(t, s.Submit("scan", "small", rec.job("small", 0)))
		holder.Release()
		synctest.Wait()
		wantRan(t, &rec, "big", "small", "small", "big", "big", "small")
		must(t, s.Close(t.Context()))
	})
}

// TestShortestFirstRequests: ShortestFirst orders a key's waiting requests
// (Acquire, RunSync) by Smith's rule as it does background jobs; it once
// ordered only Submit's jobs, which computed the estimate the rule needs,
// and left requests first come, first served.
func TestShortestFirstRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShortestFirstScheduler(t, "read", 40)
		var rec recorder
		// Learn the costs: big takes 10s, small 1s (est 3.7s and 1s).
		must(t, s.RunSync(t.Context(), "read", "big", "", rec.job("big", 10*time.Second)))
		must(t, s.RunSync(t.Context(), "read", "small", "", rec.job("small", time.Second)))

		holder, err := s.Acquire(t.Context(), Request{Type: "hold"})
		must(t, err)
		var wg sync.WaitGroup
		for _, id := range []string{"big", "small"} {
			wg.Go(func() { must(t, s.RunSync(t.Context(), "read", id, "", rec.job(id, 0))) })
			synctest.Wait()
			time.Sleep(time.Second) // small arrives 1s after big: worth less than its 7.3s lead
		}
		holder.Release()
		wg.Wait()
		wantRan(t, &rec, "big", "small", "small", "big")
		must(t, s.Close(t.Context()))
	})
}

func TestAccessAndOrderValidation(t *testing.T) {
	s, err := New(Config{Capacity: 1})
	must(t, err)
	for name, c := range map[string]JobTypeConfig{
		"shared without group": {Priority: 1, Access: Shared},
		"unknown access":       {Priority: 1, Access: 7},
		"unknown order":        {Priority: 1, Order: 9},
		"aging without order":  {Priority: 1, OrderAging: 0.5},
		"negative aging":       {Priority: 1, Order: ShortestFirst, OrderAging: -1},
		"unknown duplicates":   {Priority: 1, Duplicates: 5},
		"negative retry":       {Priority: 1, Retry: RetryPolicy{MaxAttempts: -1}},
	} {
		if err := s.RegisterType(JobType(name), c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNoJobLostRandom drives the public API with random submissions
// (duplicates, TTLs, retries), foreground requests, pauses with and without
// deadlines, and a Close, all under fake time, and checks that every
// request and job ended exactly once: the counters balance, every attempt
// that ran was counted as completed, and nothing is left queued or seated.
func TestNoJobLostRandom(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { noJobLost(t, seed) })
		})
	}
}

func noJobLost(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	s, err := New(Config{Capacity: 2, MaxQueue: 8, Aging: &AgingConfig{Interval: time.Second, Urgent: 30}})
	must(t, err)
	must(t, s.RegisterType("repack", JobTypeConfig{Priority: 5, ConflictGroup: "git", MaxWait: 20 * time.Second,
		Duplicates: Supersede, Retry: RetryPolicy{MaxAttempts: 3, Initial: time.Second}}))
	must(t, s.RegisterType("pull", JobTypeConfig{Priority: 5, ConflictGroup: "git", Duplicates: Coalesce, Access: Shared}))
	must(t, s.RegisterType("clone", JobTypeConfig{Priority: 20, ConflictGroup: "git", Access: Shared, MaxWait: 15 * time.Second}))
	var mu sync.Mutex
	attempts, released := 0, 0
	var wg sync.WaitGroup
	types := []JobType{"repack", "pull", "clone"}
	for range 150 {
		id := fmt.Sprintf("r%d", r.IntN(3))
		switch r.IntN(8) {
		case 0, 1: // background work that may fail, retryably or not
			typ := types[r.IntN(2)]
			d, fail := time.Duration(r.IntN(4))*time.Second, r.IntN(4)
			var opts []SubmitOption
			if r.IntN(3) == 0 {
				opts = append(opts, WithTTL(time.Duration(1+r.IntN(10))*time.Second))
			}
			_ = s.SubmitWith(t.Context(), typ, id, func(ctx context.Context) error {
				mu.Lock()
				attempts++
				mu.Unlock()
				time.Sleep(d)
				switch fail {
				case 0:
					return Retryable(errors.New("busy"))
				case 1:
					return errors.New("broken")
				}
				return nil
			}, opts...)
		case 2, 3: // a foreground request that may give up
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+r.IntN(20))*time.Second)
			hold := time.Duration(r.IntN(3)) * time.Second
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				p, err := s.Acquire(ctx, Request{Type: "clone", JobID: id, FairnessKey: fmt.Sprint(r.IntN(3))})
				if err == nil {
					time.Sleep(hold)
					p.Release()
					mu.Lock()
					released++
					mu.Unlock()
				}
			}()
		case 4:
			typ := types[r.IntN(3)]
			if r.IntN(2) == 0 {
				_ = s.Pause(typ, time.Duration(r.IntN(3))*5*time.Second)
			} else {
				_ = s.Resume(typ)
			}
		case 5:
			if r.IntN(2) == 0 {
				_ = s.PauseKey("", time.Duration(r.IntN(3))*5*time.Second)
			} else {
				s.ResumeKey("")
			}
		default:
			time.Sleep(time.Duration(r.IntN(3000)) * time.Millisecond)
		}
		synctest.Wait()
		s.mu.Lock()
		err := s.checkInvariantsLocked()
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("invariant broken: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(60))*time.Second)
	defer cancel()
	_ = s.Close(ctx)
	wg.Wait()
	snap := s.Snapshot()
	c := snap.Counters
	if n := c.Ended(); c.Submitted != n || snap.Queued != 0 || snap.InUse != 0 {
		t.Fatalf("counters do not balance (%d submitted, %d ended), %d queued, %d seated: %+v", c.Submitted, n, snap.Queued, snap.InUse, c)
	}
	mu.Lock()
	defer mu.Unlock()
	if c.Completed != uint64(attempts+released) {
		t.Fatalf("completed %d, but %d attempts ran and %d permits were released", c.Completed, attempts, released)
	}
}

func TestDryRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, DryRun: true}, JobTypeConfig{}, JobTypeConfig{})
		p1, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "linux"})
		must(t, err)
		p2, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "linux"}) // would wait: capacity and conflict
		must(t, err)
		var rec recorder
		must(t, s.Submit("bg", "x", rec.job("x", time.Second)))
		synctest.Wait()
		wantRan(t, &rec, "x")
		snap := s.Snapshot()
		if !snap.DryRun || snap.InUse != 3 || snap.Queued != 0 || snap.Counters.DryRunWaits != 2 {
			t.Fatalf("dry run: in use %d, queued %d, counters %+v; want all three running, two counted as waits",
				snap.InUse, snap.Queued, snap.Counters)
		}
		checkInvariants(t, s)
		// Enforcing again: the next request waits until the seats are below
		// capacity; nothing running is pre-empted.
		s.SetDryRun(false)
		w := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "other"})
		time.Sleep(time.Second) // the background job ends
		p1.Release()
		synctest.Wait()
		select {
		case <-w:
			t.Fatal("admitted while two seats of one were still held")
		default:
		}
		p2.Release()
		r := <-w
		must(t, r.err)
		// Turning dry-run on admits what is queued.
		w2 := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "more"})
		synctest.Wait()
		s.SetDryRun(true)
		r2 := <-w2
		must(t, r2.err)
		checkInvariants(t, s)
		r.p.Release()
		r2.p.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, DeadlineAware: true}, JobTypeConfig{DefaultCost: 10 * time.Second}, JobTypeConfig{})
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a"})
		must(t, err)
		time.Sleep(2 * time.Second) // the holder is expected to end in 8s
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = s.Acquire(ctx, Request{Type: "fg", JobID: "b"})
		var re *RejectedError
		if !errors.Is(err, ErrDeadlineTooSoon) || !errors.As(err, &re) || re.RetryAfter != 8*time.Second {
			t.Fatalf("Acquire with a 5s deadline behind 8s of work = %v, want ErrDeadlineTooSoon with retry after 8s", err)
		}
		// With time enough it waits and is admitted.
		ctx2, cancel2 := context.WithTimeout(t.Context(), 9*time.Second)
		defer cancel2()
		w := acquireAsync(ctx2, s, Request{Type: "fg", JobID: "c"})
		synctest.Wait()
		time.Sleep(7 * time.Second)
		holder.Release()
		r := <-w
		must(t, r.err)
		r.p.Release()
		if c := s.Snapshot().Counters; c.RejectedDeadline != 1 || c.Submitted != c.Completed+c.RejectedDeadline {
			t.Errorf("counters = %+v", c)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestDeadlineAwareCountsWorkAhead: the earliest start a deadline is
// judged against counts the work certainly ahead of the request (the
// older jobs of its own flow, and everything queued in higher tiers), and
// a request without a deadline is never turned away.
func TestDeadlineAwareCountsWorkAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, DeadlineAware: true},
			JobTypeConfig{DefaultCost: time.Second}, JobTypeConfig{DefaultCost: time.Second})
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a"}) // ends in 1s, by its estimate
		must(t, err)
		// Two foreground requests with no deadline queue behind it.
		waiting := []<-chan result{
			acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k1"}),
			acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "c", FairnessKey: "k2"}),
		}
		synctest.Wait()
		if q := s.Snapshot().Queued; q != 2 {
			t.Fatalf("%d queued, want the two requests without a deadline", q)
		}
		tooSoon := func(r Request, within, want time.Duration) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), within)
			defer cancel()
			_, err := s.Acquire(ctx, r)
			var re *RejectedError
			if !errors.Is(err, ErrDeadlineTooSoon) || !errors.As(err, &re) || re.RetryAfter != want {
				t.Errorf("%+v within %v: %v, want ErrDeadlineTooSoon with retry after %v", r, within, err, want)
			}
		}
		fits := func(r Request, within time.Duration) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), within)
			defer cancel()
			w := acquireAsync(ctx, s, r)
			synctest.Wait()
			select {
			case res := <-w:
				t.Errorf("%+v within %v: %v, want it queued", r, within, res.err)
			default:
			}
			cancel()
			if res := <-w; !errors.Is(res.err, context.Canceled) {
				t.Errorf("%+v cancelled: %v", r, res.err)
			}
		}
		// A lower tier: 1s to the first free seat, then both foreground
		// requests, 1s each on one seat.
		tooSoon(Request{Type: "bg", JobID: "x", FairnessKey: "k3"}, 2500*time.Millisecond, 3*time.Second)
		fits(Request{Type: "bg", JobID: "x", FairnessKey: "k3"}, 3500*time.Millisecond)
		// k1's flow: 1s, then k1's own older request; k2's is in another
		// flow, not certainly ahead.
		tooSoon(Request{Type: "fg", JobID: "y", FairnessKey: "k1"}, 1500*time.Millisecond, 2*time.Second)
		fits(Request{Type: "fg", JobID: "y", FairnessKey: "k1"}, 2500*time.Millisecond)

		holder.Release()
		for range waiting { // admitted one at a time, in fair order
			var r result
			select {
			case r = <-waiting[0]:
			case r = <-waiting[1]:
			}
			must(t, r.err)
			r.p.Release()
		}
		if c := s.Snapshot().Counters; c.RejectedDeadline != 2 {
			t.Errorf("RejectedDeadline = %d, want 2", c.RejectedDeadline)
		}
		checkInvariants(t, s)
		must(t, s.Close(t.Context()))
	})
}

func TestPressureGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		level := 0.9
		src := PressureFunc(func() float64 { mu.Lock(); defer mu.Unlock(); return level })
		s := newTestScheduler(t, Config{Capacity: 4, Pressure: &PressureConfig{Source: src, Threshold: 0.8, MinPriority: PriorityBackground}},
			JobTypeConfig{}, JobTypeConfig{})
		var rec recorder
		must(t, s.Submit("bg", "x", rec.job("x", 0)))
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a"}) // above MinPriority: admitted
		must(t, err)
		synctest.Wait()
		wantRan(t, &rec)
		if q := s.Snapshot().Queue; len(q) != 1 || q[0].BlockedBy != "pressure" {
			t.Fatalf("queue = %+v, want the background job held by pressure", q)
		}
		mu.Lock()
		level = 0.2
		mu.Unlock()
		time.Sleep(DefaultPressureInterval) // noticed with no arrival or release
		synctest.Wait()
		wantRan(t, &rec, "x")
		p.Release()
		must(t, s.Close(t.Context()))
	})
	if _, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Threshold: 0.5}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil source: %v", err)
	}
	if _, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Source: PressureFunc(func() float64 { return 0 }), Threshold: 2}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("threshold 2: %v", err)
	}
}

func TestRuntimePressure(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0.001, 0.002, 0.005, 0.010, math.Inf(1)}
	for _, tc := range []struct {
		counts []uint64
		want   float64
	}{
		{[]uint64{0, 0, 0, 0, 0}, 0},
		{[]uint64{100, 0, 0, 0, 0}, 0},    // all below 1ms
		{[]uint64{0, 1000, 0, 0, 0}, 0.1}, // p99 in [1ms, 2ms): 1ms / 10ms
		{[]uint64{0, 980, 0, 20, 0}, 0.5}, // 2% at 5ms or more
		{[]uint64{0, 0, 0, 0, 100}, 1},    // 10ms or more: saturated
	} {
		total := uint64(0)
		for _, c := range tc.counts {
			total += c
		}
		if got := histogramPressure(tc.counts, buckets, total, 10*time.Millisecond); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("histogramPressure(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
	r, err := NewRuntimePressure(10 * time.Millisecond)
	must(t, err)
	if p := r.Pressure(); p < 0 || p > 1 || math.IsNaN(p) {
		t.Errorf("RuntimePressure = %v, want in [0, 1]", p)
	}
	if _, err := NewRuntimePressure(0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewRuntimePressure(0) = %v", err)
	}
}

func TestWeightChangeEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []Event
		s, err := New(Config{Capacity: 4, Keys: map[string]KeyPolicy{"a": {}}}, WithEventHandler(func(e Event) {
			if e.Kind == EventAllocationChanged {
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
			}
		}))
		must(t, err)
		must(t, s.RegisterType("fg", JobTypeConfig{Priority: 8}))
		pa, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "a"})
		must(t, err)
		pb, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "b"})
		must(t, err)
		synctest.Wait()
		mu.Lock()
		got = nil
		mu.Unlock()
		must(t, s.SetWeight("a", 3)) // a: 2 seats -> 3, other: 2 -> 1
		synctest.Wait()
		mu.Lock()
		if len(got) != 2 || got[0].Reason != AllocationWeightChange || got[0].Key != "a" || !near(got[0].New, 3) ||
			got[1].Key != otherSeries || !near(got[1].New, 1) {
			t.Errorf("events after SetWeight = %+v", got)
		}
		mu.Unlock()
		pa.Release()
		pb.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestNoAging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: time.Second, Urgent: 30}})
		must(t, err)
		// Priority 40 is above Urgent: allowed, since the type never ages.
		must(t, s.RegisterType("fg", JobTypeConfig{Priority: 40, NoAging: true}))
		must(t, s.RegisterType("bg", JobTypeConfig{Priority: 10}))
		if b := s.StarvationBound("fg"); b != NoStarvationBound {
			t.Errorf("StarvationBound(fg) = %v, want none", b)
		}
		if b := s.StarvationBound("bg"); b != 20*time.Second {
			t.Errorf("StarvationBound(bg) = %v, want 20s", b)
		}
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "flood"})
		must(t, err)
		old := acquireAsync(t.Context(), s, Request{Type: "fg", FairnessKey: "flood"})
		synctest.Wait()
		time.Sleep(time.Hour)
		light := acquireAsync(t.Context(), s, Request{Type: "fg", FairnessKey: "light"})
		synctest.Wait()
		for _, q := range s.Snapshot().Queue {
			if q.EffectivePriority != 40 || q.Urgent {
				t.Fatalf("queued %+v: a NoAging job aged", q)
			}
		}
		// The light caller goes first by virtual time, although the flood's
		// request waited an hour.
		holder.Release()
		r := <-light
		must(t, r.err)
		r.p.Release()
		r = <-old
		must(t, r.err)
		r.p.Release()
		must(t, s.Close(t.Context()))
	})
}

// TestDryRunAtMaxKeys: dry-run admits the last queued job of a key while
// MaxKeys is reached. Taking the job out of the queue idles its key, and
// the bound forgets it at once; the job's seat goes to the key as the
// table tracks it, not to the forgotten record (which left an active key
// outside the table, and the observer's counts wrong).
func TestDryRunAtMaxKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1, MaxKeys: 1}, JobTypeConfig{}, JobTypeConfig{})
		p1, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "a"})
		must(t, err)
		w := acquireAsync(t.Context(), s, Request{Type: "fg", FairnessKey: "b"})
		synctest.Wait()
		s.SetDryRun(true)
		r := <-w
		must(t, r.err)
		checkInvariants(t, s)
		if snap := s.Snapshot(); snap.ActiveKeys != 2 || snap.InUse != 2 {
			t.Fatalf("after the dry-run admission: %d active keys, %d seats held; want 2 and 2", snap.ActiveKeys, snap.InUse)
		}
		s.SetDryRun(false)
		r.p.Release()
		p1.Release()
		checkInvariants(t, s)
		p, err := s.Acquire(t.Context(), Request{Type: "fg", FairnessKey: "b"})
		must(t, err)
		checkInvariants(t, s)
		p.Release()
		must(t, s.Close(t.Context()))
	})
}
