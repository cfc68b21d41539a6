package admission

import (
	"maps"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// offsetScheduler has tiers 10 ("bg"), 40 ("fg") and 42 ("hi"), and "na" at
// 50 without aging; aging makes a job urgent at 45.
func offsetScheduler(t testing.TB, capacity int) *Scheduler {
	t.Helper()
	s, err := New(Config{Capacity: capacity, Aging: &AgingConfig{Grace: time.Second, Interval: time.Second, Urgent: 45}})
	must(t, err)
	for typ, c := range map[JobType]JobTypeConfig{
		"bg": {DefaultCost: time.Second, Priority: 10},
		"fg": {DefaultCost: time.Second, Priority: 40},
		"hi": {DefaultCost: time.Second, Priority: 42},
		"na": {DefaultCost: time.Second, Priority: 50, NoAging: true},
	} {
		must(t, s.RegisterType(typ, c))
	}
	return s
}

func TestPriorityOffsetClamp(t *testing.T) {
	s := offsetScheduler(t, 1)
	defer s.Close(t.Context())
	for _, tc := range []struct {
		typ  JobType
		off  Priority
		want Priority
		why  string
	}{
		{"fg", 0, 40, "no offset"},
		{"fg", -2, 38, "room below"},
		{"fg", 1, 41, "room above"},
		{"fg", 2, 41, "tier 42 above"},
		{"fg", math.MaxInt, 41, "tier 42 above, no overflow"},
		{"fg", -100, 11, "tier 10 below"},
		{"fg", math.MinInt, 11, "tier 10 below, no overflow"},
		{"hi", 1, 43, "room above"},
		{"hi", 5, 44, "Aging.Urgent 45"},
		{"hi", -1, 41, "room below"},
		{"hi", -3, 41, "tier 40 below"},
		{"bg", -2, 8, "room below"},
		{"bg", 100, 39, "tier 40 above"},
		{"bg", -70000, 10 - maxPriorityOffset, "no tier below: at most maxPriorityOffset"},
		{"bg", math.MinInt, 10 - maxPriorityOffset, "no tier below, no overflow"},
		{"na", 3, 53, "no aging: Urgent does not bound it"},
		{"na", -100, 43, "tier 42 below"},
		{"na", math.MaxInt, 50 + maxPriorityOffset, "no tier above: at most maxPriorityOffset"},
	} {
		s.mu.Lock()
		got := s.offsetPriorityLocked(s.types[tc.typ], tc.off)
		s.mu.Unlock()
		if got != tc.want {
			t.Errorf("%s with offset %d: priority %d, want %d (%s)", tc.typ, tc.off, got, tc.want, tc.why)
		}
	}
}

// queuedPriorities returns the base priority of each queued job, by job ID.
func queuedPriorities(s *Scheduler) map[string]Priority {
	m := map[string]Priority{}
	for _, q := range s.Snapshot().Queue {
		m[q.JobID] = q.BasePriority
	}
	return m
}

// nextAdmitted waits until the bubble is idle and returns the one request
// of waiting that has been admitted, removing it; it fails if none or
// several were.
func nextAdmitted(t *testing.T, s *Scheduler, waiting map[string]<-chan result) (string, *Permit) {
	t.Helper()
	synctest.Wait()
	var id string
	var p *Permit
	for name, ch := range waiting {
		select {
		case r := <-ch:
			must(t, r.err)
			if p != nil {
				t.Fatalf("both %s and %s were admitted\n%s", id, name, dump(s))
			}
			id, p = name, r.p
		default:
		}
	}
	if p == nil {
		t.Fatalf("nothing was admitted\n%s", dump(s))
	}
	delete(waiting, id)
	checkInvariants(t, s)
	return id, p
}

// admitInTurn releases hold, and then each admitted request in turn, until
// every request of waiting has run; it returns the order they were
// admitted in.
func admitInTurn(t *testing.T, s *Scheduler, hold *Permit, waiting map[string]<-chan result) []string {
	t.Helper()
	var order []string
	for len(waiting) > 0 {
		hold.Release()
		var id string
		id, hold = nextAdmitted(t, s, waiting)
		order = append(order, id)
	}
	hold.Release()
	return order
}

// A request waits with its moved priority; a tier registered later narrows
// the room of the next requests, and none of them fails for it.
func TestPriorityOffsetQueuedAndNewTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := offsetScheduler(t, 1)
		hold, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "hold", FairnessKey: "k"})
		must(t, err)
		waiting := map[string]<-chan result{}
		waiting["first"] = acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "first", FairnessKey: "k", PriorityOffset: -2})
		synctest.Wait()
		must(t, s.RegisterType("mid", JobTypeConfig{DefaultCost: time.Second, Priority: 39}))
		waiting["second"] = acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "second", FairnessKey: "k", PriorityOffset: -2})
		synctest.Wait()
		checkInvariants(t, s)
		if got, want := queuedPriorities(s), map[string]Priority{"first": 38, "second": 40}; !maps.Equal(got, want) {
			t.Fatalf("queued priorities %v, want %v\n%s", got, want, dump(s))
		}
		// second, clamped to 40, goes before first, at 38, which came earlier.
		order := admitInTurn(t, s, hold, waiting)
		if want := []string{"second", "first"}; !slices.Equal(order, want) {
			t.Fatalf("admitted %v, want %v", order, want)
		}
		must(t, s.Close(t.Context()))
	})
}

// Within one type and key, the offsets order the queue: +1 before 0
// before -2, whatever the arrival order.
func TestPriorityOffsetOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := offsetScheduler(t, 1)
		hold, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "hold", FairnessKey: "k"})
		must(t, err)
		waiting := map[string]<-chan result{}
		for _, r := range []Request{
			{Type: "fg", JobID: "sheddable", FairnessKey: "k", PriorityOffset: -2},
			{Type: "fg", JobID: "critical", FairnessKey: "k"},
			{Type: "fg", JobID: "critical_plus", FairnessKey: "k", PriorityOffset: 1},
		} {
			waiting[r.JobID] = acquireAsync(t.Context(), s, r)
			synctest.Wait()
		}
		order := admitInTurn(t, s, hold, waiting)
		if want := []string{"critical_plus", "critical", "sheddable"}; !slices.Equal(order, want) {
			t.Fatalf("admitted %v, want %v", order, want)
		}
		must(t, s.Close(t.Context()))
	})
}

// Aging bounds a lowered request's wait: fg at 40 with offset -2 is urgent
// after Grace + (45-38)·Interval = 8 s, and then goes before a critical_plus
// request that came later.
func TestPriorityOffsetAgingBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := offsetScheduler(t, 1)
		hold, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "hold", FairnessKey: "a"})
		must(t, err)
		waiting := map[string]<-chan result{}
		waiting["sheddable"] = acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "sheddable", FairnessKey: "b", PriorityOffset: -2})
		synctest.Wait()
		time.Sleep(8*time.Second - time.Nanosecond)
		waiting["plus"] = acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "plus", FairnessKey: "c", PriorityOffset: 1})
		synctest.Wait()
		wantUrgent := func(want bool) {
			t.Helper()
			for _, q := range s.Snapshot().Queue {
				if q.JobID == "sheddable" && q.Urgent != want {
					t.Fatalf("after %v the sheddable request has urgent %v, want %v\n%s", q.Wait, q.Urgent, want, dump(s))
				}
			}
		}
		wantUrgent(false)
		time.Sleep(time.Nanosecond)
		wantUrgent(true)
		order := admitInTurn(t, s, hold, waiting)
		if want := []string{"sheddable", "plus"}; !slices.Equal(order, want) {
			t.Fatalf("admitted %v, want %v", order, want)
		}
		must(t, s.Close(t.Context()))
	})
}

// dump is the scheduler's state for failure messages.
func dump(s *Scheduler) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dumpLocked()
}
