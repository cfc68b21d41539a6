package throttle

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairseat/fairseat/internal/capacitytest"
)

// t0 is the tests' origin of time, a Clock reading far from 0; steps
// give instants relative to it.
const t0 = 1000 * time.Hour

// constant is a random source that always draws x.
func constant(x float64) func() float64 { return func() float64 { return x } }

func newThrottle(t testing.TB, cfg Config) *Throttle {
	t.Helper()
	th, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// describe prints a backend's window for failure messages.
func describe(th *Throttle, backend string) string {
	th.mu.Lock()
	defer th.mu.Unlock()
	b, ok := th.backends.Peek(backend)
	if !ok {
		return backend + ": not remembered"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: newest bucket %d, total %+v, last code %d, pushbacks %v\n  buckets:", backend, b.win.cur, b.win.total, b.lastCode, b.pushbacks)
	for i := b.win.cur - buckets + 1; i <= b.win.cur; i++ {
		if i < 0 {
			continue
		}
		if c := b.win.ring[i%buckets]; c != (count{}) {
			fmt.Fprintf(&sb, " %d:%d/%d", i, c.requests, c.accepts)
		}
	}
	return sb.String()
}

func TestNewValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Window: -time.Second}, "Window"},
		{Config{Window: 59}, "Window"},
		{Config{K: 0.5}, "K"},
		{Config{K: math.NaN()}, "K"},
		{Config{K: math.Inf(1)}, "K"},
		{Config{K: -2}, "K"},
		{Config{MaxBackends: -1}, "MaxBackends"},
		{Config{MaxPushback: -time.Second}, "MaxPushback"},
	} {
		_, err := New(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	th := newThrottle(t, Config{})
	if th.width != DefaultWindow/buckets || th.k != DefaultK || th.maxPushback != DefaultMaxPushback {
		t.Errorf("defaults: width %v, k %v, max pushback %v", th.width, th.k, th.maxPushback)
	}
}

// step is one row of a step table: at an instant, a request of kind call
// to backend "b" with random draw draw, which, if allowed, ends with
// outcome (nil: not recorded).
type step struct {
	at      time.Duration
	call    string
	draw    float64
	want    Decision
	outcome *Outcome
}

var (
	ok       = &Outcome{Accepted: true}
	overload = &Outcome{Code: 14}
)

func runSteps(t *testing.T, th *Throttle, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := t0 + s.at
		got := th.Decide("b", s.call, now, constant(s.draw))
		if diff := cmp.Diff(s.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
			t.Fatalf("step %d at %v (%s): decision (-want +got):\n%s\n%s", i, s.at, s.call, diff, describe(th, "b"))
		}
		if s.outcome != nil && got.Reason == Allowed {
			th.Record("b", s.call, now, *s.outcome)
		}
	}
}

// The window counts requests and accepts for Window (60 s here: 1 s
// buckets) and refuses with p = max(0, (R - 2A) / (R + 1)), computed before
// the request is counted.
func TestWindowAndFormula(t *testing.T) {
	th := newThrottle(t, Config{Window: time.Minute})
	runSteps(t, th, []step{
		{at: 0, draw: 0, want: Decision{}, outcome: ok}, // R 0 A 0: p 0
		{at: 0, draw: 0, want: Decision{Requests: 1, Accepts: 1}, outcome: overload},
		{at: 1 * time.Second, draw: 0.99, want: Decision{Requests: 2, Accepts: 1}, outcome: overload},                       // (2-2)/3 = 0
		{at: 2 * time.Second, draw: 0.99, want: Decision{P: 1.0 / 4, Requests: 3, Accepts: 1}, outcome: overload},           // (3-2)/4
		{at: 3 * time.Second, draw: 0.4, want: Decision{P: 2.0 / 5, Requests: 4, Accepts: 1}, outcome: overload},            // (4-2)/5 = 0.4: draw 0.4 is not below
		{at: 4 * time.Second, draw: 0.49, want: Decision{Reason: Throttled, P: 3.0 / 6, Requests: 5, Accepts: 1, Code: 14}}, // (5-2)/6
		{at: 5 * time.Second, draw: 0.99, want: Decision{P: 4.0 / 7, Requests: 6, Accepts: 1}, outcome: ok},                 // a throttled request counts
		// At 60 s the bucket of 0 s (two requests, one accept) has left the
		// window; at 61 s that of 1 s too.
		{at: 60 * time.Second, draw: 0.99, want: Decision{P: 3.0 / 6, Requests: 5, Accepts: 1}, outcome: ok}, // R 7-2, A 2-1: (5-2)/6
		{at: 61 * time.Second, draw: 0.99, want: Decision{P: 1.0 / 6, Requests: 5, Accepts: 2}},              // R 6-1, A 1+1: (5-4)/6
		// Long after, everything has left the window.
		{at: time.Hour, draw: 0, want: Decision{}},
	})
	if got, want := th.Stats(), (Stats{Requests: 8, Accepts: 3, Throttled: 1}); got != want { // the last two were not recorded
		t.Errorf("stats %+v, want %+v", got, want)
	}
}

// A pushback refuses that kind of call to the nanosecond, with the time
// left and the code of the response that asked; other kinds of call and
// other backends go on, and refusals under pushback are not counted.
func TestPushback(t *testing.T) {
	th := newThrottle(t, Config{Window: time.Minute, MaxPushback: time.Minute})
	th.Record("b", "m1", t0, Outcome{Code: 8, Pushback: 1500 * time.Millisecond}) // a request, not accepted
	runSteps(t, th, []step{
		{at: 0, call: "m1", want: Decision{Reason: PushedBack, RetryAfter: 1500 * time.Millisecond, Code: 8}},
		{at: 1500*time.Millisecond - 1, call: "m1", want: Decision{Reason: PushedBack, RetryAfter: 1, Code: 8}},
		{at: 1 * time.Millisecond, call: "m2", draw: 0.99, want: Decision{P: 1.0 / 2, Requests: 1}},
		{at: 1500 * time.Millisecond, call: "m1", draw: 0.99, want: Decision{P: 1.0 / 2, Requests: 1}},
	})
	if got := th.Decide("other", "m1", t0, constant(0)); got.Reason != Allowed {
		t.Errorf("another backend: %+v, want allowed", got)
	}
	// A shorter delay does not cut a longer one short; a delay beyond
	// MaxPushback is capped.
	th.Record("b", "m3", t0, Outcome{Code: 14, Pushback: 10 * time.Second})
	th.Record("b", "m3", t0, Outcome{Code: 14, Pushback: time.Second})
	th.Record("b", "m4", t0, Outcome{Code: 14, Pushback: 1000 * time.Hour})
	runSteps(t, th, []step{
		{at: 5 * time.Second, call: "m3", want: Decision{Reason: PushedBack, RetryAfter: 5 * time.Second, Code: 14}},
		{at: 59 * time.Second, call: "m4", want: Decision{Reason: PushedBack, RetryAfter: time.Second, Code: 14}},
		// The three records above, made at 0 s once the window had reached
		// 1.5 s, counted in the bucket of 1 s (a clock that goes back), which
		// is still in the window; the record at 0 s has left it.
		{at: 60 * time.Second, call: "m4", draw: 0.99, want: Decision{P: 3.0 / 4, Requests: 3}},
	})
	if got, want := th.Stats(), (Stats{Requests: 4, PushedBack: 4, Pushbacks: 4}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
}

// A MaxPushback so long that the end of a pushback would overflow a
// Duration ends at the latest instant instead: the call stays held back.
func TestPushbackEndSaturates(t *testing.T) {
	th := newThrottle(t, Config{MaxPushback: math.MaxInt64})
	th.Record("b", "m", t0, Outcome{Code: 14, Pushback: math.MaxInt64})
	runSteps(t, th, []step{
		{at: time.Hour, call: "m", want: Decision{Reason: PushedBack, RetryAfter: math.MaxInt64 - t0 - time.Hour, Code: 14}},
	})
}

// A backend remembers at most maxPushbacks kinds of call under pushback:
// expired ones make room first, then the one that ends first.
func TestPushbackTableBounded(t *testing.T) {
	th := newThrottle(t, Config{MaxPushback: time.Hour})
	for i := range maxPushbacks {
		// call i ends at (i+2) s, except call 5, which ends first, at 1 s.
		d := time.Duration(i+2) * time.Second
		if i == 5 {
			d = time.Second
		}
		th.Record("b", fmt.Sprint("call", i), t0, Outcome{Code: 14, Pushback: d})
	}
	th.Record("b", "new", t0, Outcome{Code: 14, Pushback: time.Minute})
	if d := th.Decide("b", "call5", t0, constant(0.99)); d.Reason != Allowed {
		t.Errorf("the pushback ending first was kept: %+v", d)
	}
	for _, c := range []string{"call0", "call63", "new"} {
		if d := th.Decide("b", c, t0, constant(0.99)); d.Reason != PushedBack {
			t.Errorf("%s: %+v, want pushed back", c, d)
		}
	}
	// At 3 s call0 (2 s) has expired: it makes room, call1 (3 s) too.
	th.Record("b", "later", t0+3*time.Second, Outcome{Code: 14, Pushback: time.Minute})
	th.mu.Lock()
	n := len(th.backends.Keys())
	b, _ := th.backends.Peek("b")
	_, has0 := b.pushbacks["call0"]
	_, has2 := b.pushbacks["call2"]
	size := len(b.pushbacks)
	th.mu.Unlock()
	if n != 1 || has0 || !has2 || size != maxPushbacks-1 {
		t.Errorf("after pruning: backends %d, call0 kept %v, call2 kept %v, size %d (want 1, false, true, %d)", n, has0, has2, size, maxPushbacks-1)
	}
}

// fail records a request to backend at now that the backend refused.
func fail(th *Throttle, backend string, now time.Duration) {
	th.Record(backend, "", now, Outcome{Code: 14})
}

// checkFront checks the invariant of Throttle.front: it is "" or the
// LRU's newest key, and frontRec is that key's record.
func checkFront(t *testing.T, th *Throttle) {
	t.Helper()
	th.mu.Lock()
	defer th.mu.Unlock()
	keys := th.backends.Keys() // oldest first
	if th.frontRec == nil {
		if th.front != "" {
			t.Fatalf("front %q without a record", th.front)
		}
		return
	}
	rec, ok := th.backends.Peek(th.front)
	if !ok || rec != th.frontRec || keys[len(keys)-1] != th.front {
		t.Fatalf("front %q (record %p) is not the newest of %q (its record %p)", th.front, th.frontRec, keys, rec)
	}
}

// Backends are an LRU: the least recently used is forgotten, and starts
// again with empty counts.
func TestBackendsBounded(t *testing.T) {
	th := newThrottle(t, Config{MaxBackends: 2})
	for _, b := range []string{"a", "a", "a", "b", "a", "c"} { // c evicts b, a being more recent
		fail(th, b, t0)
		checkFront(t, th)
	}
	if d := th.Decide("a", "", t0, constant(0.99)); d.Requests != 4 {
		t.Errorf("a was forgotten: %+v", d)
	}
	checkFront(t, th)
	if d := th.Decide("b", "", t0, constant(0.99)); d.Requests != 0 {
		t.Errorf("b was not forgotten: %+v", d)
	}
	checkFront(t, th)

	// With room for one backend, each new one evicts the front itself.
	one := newThrottle(t, Config{MaxBackends: 1})
	for _, b := range []string{"a", "b", "b", "a"} {
		fail(one, b, t0)
		checkFront(t, one)
	}
	if d := one.Decide("a", "", t0, constant(0.99)); d.Requests != 1 {
		t.Errorf("MaxBackends 1: a has %d requests, want 1 (it was evicted by b)", d.Requests)
	}
}

// A clock that goes back counts in the newest bucket.
func TestClockGoesBack(t *testing.T) {
	th := newThrottle(t, Config{Window: time.Minute})
	fail(th, "b", t0+10*time.Second)
	fail(th, "b", t0)
	if d := th.Decide("b", "", t0+69*time.Second, constant(0.99)); d.Requests != 2 {
		t.Errorf("at 69 s: %+v, want both requests in the bucket of 10 s\n%s", d, describe(th, "b"))
	}
	fail(th, "b", t0+69*time.Second)
	if d := th.Decide("b", "", t0+70*time.Second, constant(0.99)); d.Requests != 1 {
		t.Errorf("at 70 s: %+v, want only the request of 69 s\n%s", d, describe(th, "b"))
	}
}

// A backend that accepts at most 10 requests a second, offered 100 a
// second: once the window is full, it is sent about K times what it
// accepts, and when it recovers the client sends everything again within
// a window.
func TestConvergesToKTimesAccepts(t *testing.T) {
	for _, k := range []float64{2, 1.5} {
		t.Run(fmt.Sprint("K=", k), func(t *testing.T) {
			th := newThrottle(t, Config{Window: 10 * time.Second, K: k})
			rng := rand.New(rand.NewPCG(1, 2))
			backend := capacitytest.New(10)
			// run offers 100 requests a second from from to to and returns
			// how many were sent and accepted.
			run := func(from, to time.Duration) (sent, accepted int) {
				for at := from; at < to; at += 10 * time.Millisecond {
					now := t0 + at
					if d := th.Decide("b", "", now, rng.Float64); d.Reason != Allowed {
						continue
					}
					sent++
					if backend.Admit(time.Unix(0, int64(now))) {
						accepted++
						th.Record("b", "", now, Outcome{Accepted: true})
					} else {
						th.Record("b", "", now, Outcome{Code: 14})
					}
				}
				return sent, accepted
			}
			run(0, 20*time.Second) // fill the window
			sent, accepted := run(20*time.Second, 80*time.Second)
			ratio := float64(sent) / float64(accepted)
			if accepted < 550 || ratio > k*1.1 || ratio < k*0.9 {
				t.Errorf("overloaded: sent %d, accepted %d: ratio %.2f, want about %v with the backend busy\n%s", sent, accepted, ratio, k, describe(th, "b"))
			}
			// Recovered: everything sent is accepted, and the share sent
			// grows about K-fold per window (p = 1 - K·share while the
			// window still holds refusals) until p reaches 0: from about
			// 1/K·(1/10) of the offered load, two windows for K = 2, four
			// for K = 1.5.
			backend.Take(1000)
			windows, at := 0, 80*time.Second
			for sent := 0; sent < 950; windows++ {
				sent, _ = run(at, at+10*time.Second)
				at += 10 * time.Second
			}
			if most := map[float64]int{2: 2, 1.5: 4}[k]; windows > most {
				t.Errorf("recovered: %d windows until 95%% of the load was sent, want at most %d\n%s", windows, most, describe(th, "b"))
			}
		})
	}
}

// Concurrent use: every decision is counted once (run with -race).
func TestConcurrentUse(t *testing.T) {
	th := newThrottle(t, Config{MaxBackends: 4})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := range 1000 {
				backend := fmt.Sprint("b", (g+i)%6)
				now := t0 + time.Duration(i)*time.Millisecond
				d := th.Decide(backend, "m", now, rng.Float64)
				if d.Reason == Allowed {
					th.Record(backend, "m", now, Outcome{Accepted: i%3 == 0, Code: 14, Pushback: time.Duration(i%50) * time.Microsecond})
				}
			}
		})
	}
	wg.Wait()
	checkFront(t, th)
	s := th.Stats()
	if s.Requests+s.PushedBack != 8000 || s.Throttled > s.Requests || s.Accepts > s.Requests {
		t.Errorf("stats %+v: want 8000 decisions in all", s)
	}
}

// Requests in flight have no outcome yet and do not count: a burst of
// calls to a backend just met is not throttled, even by a draw of 0.
func TestInFlightNotCounted(t *testing.T) {
	th := newThrottle(t, Config{})
	for i := range 100 {
		if d := th.Decide("b", "", t0, constant(0)); d.Reason != Allowed || d.Requests != 0 {
			t.Fatalf("request %d of a burst: %+v, want allowed with nothing counted", i, d)
		}
	}
}

// A backend's memory is bounded whatever names its callers use: thousands
// of distinct, long kinds of call under pushback, and thousands of distinct,
// long backends, keep at most maxPushbacks calls per backend, MaxBackends
// backends, and names of at most maxKeyLen bytes each. A long name is still
// found again: its pushback holds.
func TestKeysBounded(t *testing.T) {
	long := strings.Repeat("m", 8<<10)
	th := newThrottle(t, Config{MaxBackends: 16, MaxPushback: time.Hour})
	for i := range 2_000 {
		th.Record("b", fmt.Sprint(long, i), t0, Outcome{Code: 8, Pushback: time.Minute})
	}
	if d := th.Decide("b", fmt.Sprint(long, 1_999), t0, constant(0.99)); d.Reason != PushedBack || d.RetryAfter != time.Minute {
		t.Errorf("the last long call: %+v, want pushed back for 1m", d)
	}
	fp := th.Footprint()
	if fp.Backends != 1 || fp.Pushbacks != maxPushbacks || fp.MaxPushbacks != maxPushbacks || fp.KeyBytes > (1+maxPushbacks)*maxKeyLen {
		t.Errorf("after 2,000 long calls: %+v, want 1 backend, %d pushbacks, at most %d bytes of names", fp, maxPushbacks, (1+maxPushbacks)*maxKeyLen)
	}
	for i := range 2_000 {
		th.Record(fmt.Sprint(long, i), "c", t0, Outcome{Code: 8, Pushback: time.Minute})
	}
	if d := th.Decide(fmt.Sprint(long, 1_999), "c", t0, constant(0.99)); d.Reason != PushedBack {
		t.Errorf("the last long backend: %+v, want pushed back", d)
	}
	fp = th.Footprint()
	if fp.Backends != 16 || fp.Pushbacks != 16 || fp.MaxPushbacks != 1 || fp.KeyBytes > 16*2*maxKeyLen {
		t.Errorf("after 2,000 long backends: %+v, want 16 backends of one pushback each, at most %d bytes of names", fp, 16*2*maxKeyLen)
	}
	checkFront(t, th)
}

// ParseDelay reads digits only, saturating at the longest Duration;
// anything else, however many digits it starts with, is not a delay.
func TestParseDelay(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		in   string
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{"0", time.Second, 0, true},
		{"1234", time.Millisecond, 1234 * time.Millisecond, true},
		{"0005", time.Second, 5 * time.Second, true},
		{"9223372036", time.Second, 9223372036 * time.Second, true},
		{"9223372037", time.Second, maxD, true}, // the first count of seconds past the longest Duration
		{"9223372036854", time.Millisecond, 9223372036854 * time.Millisecond, true},
		{"9223372036855", time.Millisecond, maxD, true},
		{"9223372036854775807", 1, maxD, true},
		{"9223372036854775808", 1, maxD, true},
		{"99999999999999999999999", time.Second, maxD, true},
		{strings.Repeat("9", 1<<16), time.Millisecond, maxD, true},
		{"", time.Second, 0, false},
		{"-1", time.Second, 0, false},
		{"+1", time.Second, 0, false},
		{" 1", time.Second, 0, false},
		{"1 ", time.Second, 0, false},
		{"1.5", time.Second, 0, false},
		{"1e3", time.Second, 0, false},
		{"99999999999999999999999x", time.Second, 0, false},
		{"٣", time.Second, 0, false}, // a digit, but not ASCII
		{"5", 0, 0, false},
		{"5", -time.Second, 0, false},
		{"5", maxD, maxD, true}, // five of the longest Duration saturate
		{"1", maxD, maxD, true},
	} {
		d, ok := ParseDelay(tc.in, tc.unit)
		if d != tc.want || ok != tc.ok {
			t.Errorf("ParseDelay(%.30q, %v) = %v, %v; want %v, %v", tc.in, tc.unit, d, ok, tc.want, tc.ok)
		}
	}
}
