package throttle

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzThrottle runs the throttle through arbitrary sequences of decisions
// and outcomes — over a few backends and more kinds of call than a backend
// keeps, with times that jump forward, stand still or go back, and the
// pushbacks a hostile server may ask for (negative, zero, tiny, huge, the
// longest Duration) — and checks after every step: a decision's
// probability is in [0, 1), its counts are consistent, a pushback is
// positive and at most MaxPushback (plus as much as the clock went back);
// a pushback just recorded is honoured
// at once for at least what it asked (capped); each window's totals are
// the sum of its buckets and never negative; and the backends, the
// pushbacks per backend and the bytes of names kept stay bounded.
func FuzzThrottle(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 5, 1, 1, 70, 6})
	f.Add([]byte{1, 2, 3, 4, 1, 2, 3, 7, 1, 2, 3, 200, 0, 2, 3, 0})
	f.Add([]byte("\x01\x00\x01\x07\x01\x00\x02\x07\x01\x00\x03\x07\x00\x00\x01\x00"))
	const maxPushback = time.Minute
	names := []string{"a", "b", "c", strings.Repeat("long", 100), "e"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		th, err := New(Config{Window: 6 * time.Second, K: 2, MaxBackends: 3, MaxPushback: maxPushback})
		if err != nil {
			t.Fatal(err)
		}
		now, latest := t0, t0 // latest: the latest time seen, which a clock that goes back leaves behind
		for i := 0; i+3 < len(ops) && i < 4*500; i += 4 {
			op, b, c, arg := ops[i], names[int(ops[i+1])%len(names)], fmt.Sprint("call", ops[i+2]%80), ops[i+3]
			switch {
			case arg < 200:
				now += time.Duration(arg) * 10 * time.Millisecond
			case arg < 220:
				now -= time.Duration(arg-200) * time.Second // a clock that goes back
			default:
				now += time.Duration(arg-220) * time.Minute
			}
			latest = max(latest, now)
			// A pushback ends at most MaxPushback after the latest time
			// seen: the time left grows by as much as the clock went back.
			maxLeft := maxPushback + latest - now
			if op%2 == 0 {
				d := th.Decide(b, c, now, func() float64 { return float64(arg) / 256 })
				checkDecision(t, d, maxLeft)
				continue
			}
			o := Outcome{Accepted: op%4 == 1, Code: int(op), Pushback: pushbackOf(arg)}
			th.Record(b, c, now, o)
			if o.Pushback > 0 {
				d := th.Decide(b, c, now, func() float64 { return 0 })
				if d.Reason != PushedBack || d.RetryAfter < min(o.Pushback, maxPushback) {
					t.Fatalf("a pushback of %v just recorded for %s %s: %+v", o.Pushback, b, c, d)
				}
				checkDecision(t, d, maxLeft)
			}
			checkState(t, th)
		}
	})
}

// pushbackOf maps a byte to the pushbacks a server may ask for.
func pushbackOf(arg byte) time.Duration {
	switch arg % 8 {
	case 0:
		return 0
	case 1:
		return -time.Duration(arg) * time.Second
	case 2:
		return math.MinInt64
	case 3:
		return 1
	case 4:
		return time.Duration(arg) * 100 * time.Millisecond
	case 5:
		return math.MaxInt64
	case 6:
		return 365 * 24 * time.Hour
	}
	return time.Duration(arg) * time.Second
}

// checkDecision fails unless d is a possible decision, its pushback
// leaving at most maxLeft.
func checkDecision(t *testing.T, d Decision, maxLeft time.Duration) {
	t.Helper()
	switch {
	case !(d.P >= 0 && d.P < 1), d.Requests < d.Accepts, d.Accepts < 0:
		t.Fatalf("decision %+v: probability or counts impossible", d)
	case d.Reason == PushedBack && (d.RetryAfter <= 0 || d.RetryAfter > maxLeft):
		t.Fatalf("decision %+v: a pushback outside (0, %v]", d, maxLeft)
	case d.Reason != PushedBack && d.RetryAfter != 0, d.Reason == Throttled && d.P == 0:
		t.Fatalf("decision %+v: inconsistent", d)
	}
}

// checkState fails unless every window's totals are the sum of its
// buckets and the memory bounds hold.
func checkState(t *testing.T, th *Throttle) {
	t.Helper()
	fp := th.Footprint()
	if fp.Backends > 3 || fp.MaxPushbacks > maxPushbacks || fp.KeyBytes > fp.Backends*(1+maxPushbacks)*maxKeyLen {
		t.Fatalf("footprint %+v beyond its bounds", fp)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, name := range th.backends.Keys() {
		b, _ := th.backends.Peek(name)
		var sum count
		for _, c := range b.win.ring {
			if c.requests < c.accepts || c.accepts < 0 {
				t.Fatalf("%s: a bucket of %+v", name, c)
			}
			sum.requests += c.requests
			sum.accepts += c.accepts
		}
		if sum != b.win.total {
			t.Fatalf("%s: total %+v, buckets sum to %+v", name, b.win.total, sum)
		}
	}
}
