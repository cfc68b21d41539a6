package throttle

import (
	"testing"
	"testing/synctest"
	"time"
)

// A Clock reads the monotonic clock: its reading lies between two
// readings of time.Now taken around it.
func TestClockIsMonotonicNow(t *testing.T) {
	c := NewClock()
	for range 1000 {
		before := time.Since(c.start)
		now := c.Now()
		after := time.Since(c.start)
		if now < before || now > after {
			t.Fatalf("Clock.Now %v is not between time.Now's %v and %v", now, before, after)
		}
	}
}

// In a synctest bubble a Clock follows the fake clock to the nanosecond,
// whether it was made inside the bubble or outside.
func TestClockInBubble(t *testing.T) {
	outside := NewClock()
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name string
			c    Clock
		}{{"made inside", NewClock()}, {"made outside", outside}} {
			start := tc.c.Now()
			time.Sleep(time.Second - time.Nanosecond)
			if got := tc.c.Now() - start; got != time.Second-time.Nanosecond {
				t.Errorf("%s: %v elapsed after sleeping 1s-1ns", tc.name, got)
			}
		}
	})
}
