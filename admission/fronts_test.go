package admission

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// The scheduler remembers the newest entry of its LRU of cost estimates
// (costsFront) to skip the map on a repeat.
// TestFrontsForgottenByEviction makes each remembered entry go away and
// checks that the shortcut follows the map (checkFrontsLocked, through
// checkInvariants) and that a repeat then finds the map's entry.

// TestIdleResourcesSwept: idle conflict entries are swept in bulk once more
// than maxIdleResources pile up, and the table works on after the sweep.
func TestIdleResourcesSwept(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
	use := func(id string) {
		t.Helper()
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: id, FairnessKey: "k"})
		must(t, err)
		p.Release()
	}
	for i := range maxIdleResources + 1 { // the last release sweeps them all
		use("repo-" + strconv.Itoa(i))
	}
	s.mu.Lock()
	n := 0
	for range s.allResourcesLocked() {
		n++
	}
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d conflict entries left after the sweep, want 0", n)
	}
	checkInvariants(t, s)
	use("repo-" + strconv.Itoa(maxIdleResources)) // the last one again
	use("other")
	checkInvariants(t, s)
}

// TestFrontsForgottenByEviction: with room for one key and one cost
// estimate, every new key or job ID evicts the remembered one; with a short
// KeyTTL, the only key expires while idle and a new key removes it.
func TestFrontsForgottenByEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Capacity: 1, MaxKeys: 1, MaxCostEntries: 1, KeyTTL: time.Minute}
		s := newTestScheduler(t, cfg, JobTypeConfig{DefaultCost: 10 * time.Second}, JobTypeConfig{})
		use := func(id, key string) {
			t.Helper()
			p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: id, FairnessKey: key})
			must(t, err)
			time.Sleep(time.Second)
			p.Release()
			checkInvariants(t, s)
		}
		use("a", "k1")
		use("b", "k2") // evicts k1's state and a's estimate
		use("a", "k1")
		time.Sleep(2 * time.Minute) // k1 expires idle
		use("a", "k3")              // removes k1, then adds k3
		s.mu.Lock()
		e, _ := s.estimateLocked(s.types["fg"], "a", s.now())
		s.mu.Unlock()
		if e >= 10 {
			t.Errorf("estimate of a = %v s, want it learned below the 10 s default from its 1 s runs", e)
		}
	})
}
