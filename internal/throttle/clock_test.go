package throttle

import (
	"testing"
	"testing/synctest"
	"time"
)

// A Clock's time is the monotonic clock's: between two readings of
// time.Now taken around it.
func TestClockIsMonotonicNow(t *testing.T) {
	c := NewClock()
	for range 1000 {
		before := time.Now()
		now := c.Now()
		after := time.Now()
		if now.Before(before) || now.After(after) {
			t.Fatalf("Clock.Now %v is not between time.Now %v and %v", now, before, after)
		}
	}
}

// In a synctest bubble a Clock follows the fake clock, whether it was
// made inside the bubble or outside, and its times compare with
// time.Now's (which carry no monotonic reading there) to the nanosecond.
func TestClockInBubble(t *testing.T) {
	outside := NewClock()
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name string
			c    Clock
		}{{"made inside", NewClock()}, {"made outside", outside}} {
			start := tc.c.Now()
			deadline := time.Now().Add(time.Second)
			time.Sleep(time.Second - time.Nanosecond)
			if now := tc.c.Now(); !now.Before(deadline) || now.Sub(start) != time.Second-time.Nanosecond {
				t.Errorf("%s: %v after sleeping 1s-1ns: before the deadline %v: %v, elapsed %v", tc.name, now, deadline, now.Before(deadline), now.Sub(start))
			}
			time.Sleep(time.Nanosecond)
			if now := tc.c.Now(); now.Before(deadline) {
				t.Errorf("%s: %v is still before the deadline %v", tc.name, now, deadline)
			}
		}
	})
}
