package capacitytest

import (
	"testing"
	"time"
)

func TestBackend(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := New(2)
	var got []bool
	for _, at := range []time.Duration{0, 100 * time.Millisecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, 1600 * time.Millisecond} {
		got = append(got, b.Admit(t0.Add(at)))
	}
	want := []bool{true, true, false, true, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("admitted %v, want %v", got, want)
		}
	}
	if seen, accepted := b.Take(1); seen != 6 || accepted != 4 {
		t.Fatalf("Take: %d seen, %d accepted; want 6, 4", seen, accepted)
	}
	if !b.Admit(t0.Add(2*time.Second)) || b.Admit(t0.Add(2*time.Second)) {
		t.Fatal("after Take(1) the next second admits one call")
	}
}
