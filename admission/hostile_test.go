package admission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Fairness keys and job IDs at MaxIdentifierLen are kept as they are, and
// one byte past it are folded to "sha256:" and 64 hex digits; every entry
// point that takes a key or a job ID folds it the same way, so a long key
// paused, weighted or used by Submit is the same key Acquire uses, and a
// long job ID conflicts with itself.
func TestHostileIdentifierLengths(t *testing.T) {
	synctest.Test(t, testHostileIdentifierLengths)
}

func testHostileIdentifierLengths(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 4, DefaultKey: KeyPolicy{MaxInFlight: 1}}, JobTypeConfig{}, JobTypeConfig{ConflictGroup: "git"})
	at := strings.Repeat("k", MaxIdentifierLen)
	past := at + "x"
	past2 := at + "y" // differs from past only beyond the limit
	for _, tc := range []struct {
		in   string
		want func(string) bool
	}{
		{at, func(got string) bool { return got == at }},
		{past, func(got string) bool { return strings.HasPrefix(got, "sha256:") && len(got) == len("sha256:")+64 }},
	} {
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "id", FairnessKey: tc.in})
		must(t, err)
		keys := s.Snapshot().Keys
		if len(keys) != 1 || !tc.want(keys[0].Key) {
			t.Errorf("key of %d bytes stored as %+v", len(tc.in), keys)
		}
		p.Release()
	}
	if foldIdentifier(past) == foldIdentifier(past2) {
		t.Error("keys that differ past MaxIdentifierLen collide")
	}

	// A long key: PauseKey holds Acquire of the same long key, not the other.
	must(t, s.PauseKey(past, 0))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx, Request{Type: "fg", JobID: "a", FairnessKey: past}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire with a paused long key: %v, want to wait until the deadline", err)
	}
	p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "b", FairnessKey: past2})
	must(t, err)
	p.Release()
	s.ResumeKey(past)
	must(t, s.SetWeight(past, 2))
	for _, k := range []string{past, past2} {
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "w", FairnessKey: k})
		must(t, err)
		if ks := s.Snapshot().Keys; len(ks) != 1 || (ks[0].Weight == 2) != (k == past) {
			t.Errorf("SetWeight of a long key: %+v", ks)
		}
		p.Release()
	}

	// Long job IDs: one past the limit conflicts with itself, not with its
	// neighbour; Submit folds as Acquire does.
	p, err = s.Acquire(t.Context(), Request{Type: "fg", JobID: past, FairnessKey: "a"})
	must(t, err)
	ctx2, cancel2 := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel2()
	if _, err := s.Acquire(ctx2, Request{Type: "fg", JobID: past, FairnessKey: "b"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second job on the same long job ID: %v, want to wait", err)
	}
	p2, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: past2, FairnessKey: "b"})
	must(t, err)
	ran := make(chan string, 1)
	must(t, s.Submit("bg", past, func(context.Context) error { ran <- "bg"; return nil }))
	if q := s.Snapshot().Queue; len(q) != 1 || q[0].JobID != foldIdentifier(past) || q[0].BlockedBy != "conflict" {
		t.Errorf("Submit on the held long job ID: queue %+v", q)
	}
	p.Release()
	<-ran
	p2.Release()
	checkInvariants(t, s)
	must(t, s.Close(t.Context()))
}
