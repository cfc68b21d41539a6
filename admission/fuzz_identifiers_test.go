package admission

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// FuzzIdentifiers admits a request and submits a job with arbitrary fairness
// keys and job IDs: nothing panics, the scheduler holds the key as
// foldIdentifier gives it (unchanged up to MaxIdentifierLen, a 71-byte
// digest past it, never longer), and the job runs.
func FuzzIdentifiers(f *testing.F) {
	f.Add("", "")
	f.Add("ip:203.0.113.7", "github.com/torvalds/linux")
	f.Add(strings.Repeat("k", MaxIdentifierLen), strings.Repeat("j", MaxIdentifierLen+1))
	f.Add("\xff\xfe\x00", "sha256:0000")
	s, err := New(Config{Capacity: 2, MaxKeys: 8, MaxCostEntries: 8})
	if err != nil {
		f.Fatal(err)
	}
	must(f, s.RegisterType("fg", JobTypeConfig{Priority: PriorityForeground, ConflictGroup: "git"}))
	must(f, s.RegisterType("bg", JobTypeConfig{Priority: PriorityBackground, ConflictGroup: "git"}))
	f.Cleanup(func() { _ = s.Close(context.Background()) })
	f.Fuzz(func(t *testing.T, key, id string) {
		fold := foldIdentifier(key)
		if len(fold) > MaxIdentifierLen || (fold == key) != (len(key) <= MaxIdentifierLen) || foldIdentifier(fold) != fold {
			t.Fatalf("foldIdentifier(%d bytes) = %q", len(key), fold)
		}
		p, err := s.Acquire(context.Background(), Request{Type: "fg", JobID: id, FairnessKey: key})
		if err != nil {
			t.Fatal(err)
		}
		ks := s.Snapshot().Keys
		p.Release()
		if len(ks) != 1 || ks[0].Key != fold {
			t.Fatalf("key of %d bytes held as %+v, want %q", len(key), ks, fold)
		}
		done := make(chan struct{})
		if err := s.SubmitWith(context.Background(), "bg", id, func(context.Context) error { close(done); return nil }, WithFairnessKey(key)); err != nil {
			t.Fatal(err)
		}
		<-done
		// The job releases its seat after fn returns: wait for that, so that
		// the next input finds the scheduler idle.
		for s.Snapshot().InUse != 0 {
			runtime.Gosched()
		}
	})
}
