package adaptive

import (
	"runtime"
	"testing"
	"time"
)

// TestCPUServer: a job's work is its base time, counted whatever the time
// it took, and the capacity is GOMAXPROCS.
func TestCPUServer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	v := newCPUServer(2)
	if v.perMs <= 0 {
		t.Fatalf("calibrated at %v iterations per millisecond", v.perMs)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 || v.Capacity() != 2 {
		t.Errorf("GOMAXPROCS %d, Capacity %d after newCPUServer(2)", got, v.Capacity())
	}
	v.Serve(2500 * time.Microsecond)
	v.Serve(0)
	if seat := v.Serve(time.Millisecond); seat <= 0 {
		t.Errorf("a job of 1ms took %v", seat)
	}
	if got, want := v.Work(), 3500*time.Microsecond; got != want {
		t.Errorf("Work after jobs of 2.5ms, 0 and 1ms: %v, want %v", got, want)
	}
	v.SetCapacity(1)
	if got := runtime.GOMAXPROCS(0); got != 1 || v.Capacity() != 1 {
		t.Errorf("GOMAXPROCS %d, Capacity %d after SetCapacity(1)", got, v.Capacity())
	}
}
