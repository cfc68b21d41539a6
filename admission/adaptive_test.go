package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAdaptiveConfigErrors: every invalid AdaptiveConfig is refused by New
// with an error that wraps ErrInvalidConfig and names the field.
func TestAdaptiveConfigErrors(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"min below 1", Config{Adaptive: &AdaptiveConfig{Min: -1, Max: 4}}, "Adaptive.Min"},
		{"max below min", Config{Adaptive: &AdaptiveConfig{Min: 4, Max: 3}}, "Adaptive.Max"},
		{"max missing", Config{Adaptive: &AdaptiveConfig{}}, "Adaptive.Max"},
		{"initial above max", Config{Adaptive: &AdaptiveConfig{Max: 4, Initial: 5}}, "Adaptive.Initial"},
		{"initial below min", Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 4, Initial: 1}}, "Adaptive.Initial"},
		{"capacity outside bounds", Config{Capacity: 9, Adaptive: &AdaptiveConfig{Max: 4}}, "Adaptive.Initial"},
		{"capacity and initial differ", Config{Capacity: 3, Adaptive: &AdaptiveConfig{Max: 4, Initial: 2}}, "Capacity (3) and Adaptive.Initial (2)"},
		{"negative capacity", Config{Capacity: -1, Adaptive: &AdaptiveConfig{Max: 4}}, "Capacity"},
		{"tolerance NaN", Config{Adaptive: &AdaptiveConfig{Max: 4, Tolerance: nan}}, "Adaptive.Tolerance"},
		{"tolerance below 1", Config{Adaptive: &AdaptiveConfig{Max: 4, Tolerance: 0.9}}, "Adaptive.Tolerance"},
		{"tolerance infinite", Config{Adaptive: &AdaptiveConfig{Max: 4, Tolerance: math.Inf(1)}}, "Adaptive.Tolerance"},
		{"headroom negative", Config{Adaptive: &AdaptiveConfig{Max: 4, Headroom: -1}}, "Adaptive.Headroom"},
		{"smoothing above 1", Config{Adaptive: &AdaptiveConfig{Max: 4, Smoothing: 1.5}}, "Adaptive.Smoothing"},
		{"used fraction NaN", Config{Adaptive: &AdaptiveConfig{Max: 4, UsedFraction: nan}}, "Adaptive.UsedFraction"},
		{"pressure backoff 1", Config{Adaptive: &AdaptiveConfig{Max: 4, PressureBackoff: 1}}, "Adaptive.PressureBackoff"},
		{"probe interval negative", Config{Adaptive: &AdaptiveConfig{Max: 4, ProbeInterval: -1}}, "Adaptive.ProbeInterval"},
		{"probe interval too small", Config{Adaptive: &AdaptiveConfig{Max: 4, ProbeInterval: 2}}, "Adaptive.ProbeInterval"},
		{"queue delay target negative", Config{Adaptive: &AdaptiveConfig{Max: 4, QueueDelayTarget: -1}}, "Adaptive.QueueDelayTarget"},
		{"queue delay interval negative", Config{Adaptive: &AdaptiveConfig{Max: 4, QueueDelayInterval: -1}}, "Adaptive.QueueDelayInterval"},
		{"min seats above min", Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 8}, Keys: map[string]KeyPolicy{"a": {MinSeats: 3}}}, `Keys["a"].MinSeats`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New(%+v) = %v, want ErrInvalidConfig naming %q", *tc.cfg.Adaptive, err, tc.field)
			}
		})
	}
}

// TestAdaptiveConfigDefaults: zero fields take their documented defaults,
// and Config.Capacity is the initial limit.
func TestAdaptiveConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		initial  int // want
	}{
		{"no capacity: starts at Min", 0, 1},
		{"capacity: starts there", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Capacity: tc.capacity, Adaptive: &AdaptiveConfig{Max: 10}})
			must(t, err)
			want := AdaptiveConfig{Min: 1, Max: 10, Initial: tc.initial, Tolerance: DefaultAdaptiveTolerance,
				Headroom: DefaultAdaptiveHeadroom, Smoothing: DefaultAdaptiveSmoothing, UsedFraction: DefaultAdaptiveUsedFraction,
				PressureBackoff: DefaultAdaptivePressureBackoff, ProbeInterval: DefaultAdaptiveProbeInterval,
				QueueDelayInterval: DefaultQueueDelayInterval}
			if d := cmp.Diff(want, s.adaptive.cfg); d != "" {
				t.Errorf("AdaptiveConfig after defaults (-want +got):\n%s", d)
			}
			if snap := s.Snapshot(); snap.Capacity != tc.initial || snap.Adaptive == nil || snap.Adaptive.Limit != float64(tc.initial) {
				t.Errorf("Snapshot: capacity %d, adaptive %+v; want %d", snap.Capacity, snap.Adaptive, tc.initial)
			}
		})
	}
}

// TestAdaptiveOperator: SetCapacity is refused while the capacity is
// adaptive; SetAdaptiveBounds moves the bounds, clamps the limit into them
// and reports the change.
func TestAdaptiveOperator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &eventLog{}
		s, err := New(Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 16, Initial: 8}, Keys: map[string]KeyPolicy{"a": {MinSeats: 2}}},
			WithEventHandler(log.handle))
		must(t, err)
		defer s.Close(context.Background())
		if err := s.SetCapacity(4); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "SetAdaptiveBounds") {
			t.Errorf("SetCapacity while adaptive = %v, want ErrInvalidConfig pointing to SetAdaptiveBounds", err)
		}
		for _, b := range [][2]int{{0, 4}, {5, 4}, {1, 4}} { // the last is below the keys' MinSeats
			if err := s.SetAdaptiveBounds(b[0], b[1]); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("SetAdaptiveBounds(%d, %d) = %v, want ErrInvalidConfig", b[0], b[1], err)
			}
		}
		if err := s.SetKeyPolicy("b", KeyPolicy{MinSeats: 1}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("SetKeyPolicy with MinSeats summing above Min = %v, want ErrInvalidConfig", err)
		}
		if c := s.Snapshot().Capacity; c != 8 {
			t.Fatalf("capacity %d after refused calls, want 8", c)
		}
		must(t, s.SetAdaptiveBounds(2, 3))
		must(t, s.SetAdaptiveBounds(5, 6))
		must(t, s.SetAdaptiveBounds(2, 6)) // the limit is within: no change
		checkInvariants(t, s)
		snap := s.Snapshot()
		var got []CapacityChange
		for _, c := range snap.Adaptive.History {
			got = append(got, CapacityChange{Previous: c.Previous, New: c.New, Reason: c.Reason})
		}
		want := []CapacityChange{{Previous: 8, New: 3, Reason: CapacityOperator}, {Previous: 3, New: 5, Reason: CapacityOperator}}
		if d := cmp.Diff(want, got); d != "" || snap.Capacity != 5 || snap.Adaptive.Min != 2 || snap.Adaptive.Max != 6 {
			t.Errorf("after SetAdaptiveBounds: capacity %d, bounds [%d, %d], history (-want +got):\n%s",
				snap.Capacity, snap.Adaptive.Min, snap.Adaptive.Max, d)
		}
		var evs []CapacityChange
		for _, e := range log.take() {
			if e.Kind == EventCapacityChanged {
				evs = append(evs, CapacityChange{Previous: int(e.Previous), New: int(e.New), Reason: e.CapacityReason})
			}
		}
		if d := cmp.Diff(want, evs); d != "" {
			t.Errorf("EventCapacityChanged (-want +got):\n%s", d)
		}

		fixed, err := New(Config{Capacity: 2})
		must(t, err)
		if err := fixed.SetAdaptiveBounds(1, 2); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("SetAdaptiveBounds on a fixed capacity = %v, want ErrInvalidConfig", err)
		}
		if fixed.Snapshot().Adaptive != nil {
			t.Error("a fixed capacity has an AdaptiveSnapshot")
		}
	})
}

// TestAdaptiveHistoryBounded: the Snapshot keeps the last CapacityHistory
// changes, oldest first.
func TestAdaptiveHistoryBounded(t *testing.T) {
	s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 100, Initial: 50}})
	must(t, err)
	for i := range 2*CapacityHistory + 3 {
		must(t, s.SetAdaptiveBounds(10+i, 10+i)) // pins the limit at 10+i: one change each
	}
	checkInvariants(t, s)
	h := s.Snapshot().Adaptive.History
	if len(h) != CapacityHistory {
		t.Fatalf("%d changes kept, want %d", len(h), CapacityHistory)
	}
	last := h[len(h)-1]
	if last.New != 10+2*CapacityHistory+2 || h[0].New != 10+CapacityHistory+3 {
		t.Errorf("oldest change kept %+v, newest %+v; want the last %d, to %d and %d", h[0], last, CapacityHistory,
			10+CapacityHistory+3, 10+2*CapacityHistory+2)
	}
	for i := 1; i < len(h); i++ {
		if h[i].Previous != h[i-1].New {
			t.Fatalf("history not in order at %d: %+v then %+v", i, h[i-1], h[i])
		}
	}
}

// TestUpdateRef: a reference is replaced by an observation at a lower
// load, moved by the cost EMA's alpha in log at the same load (a geometric
// mean: 2 and then 4 give 2·2^0.3), and left alone at
// a higher load (where congestion may explain the longer time).
func TestUpdateRef(t *testing.T) {
	e := &costEntry{}
	for _, st := range []struct {
		obs     float64
		load    int32
		ref     float64
		refLoad int32
	}{
		{2, 8, 2, 8},                       // first: taken
		{4, 8, 2 * math.Pow(2, 0.3), 8},    // same load: moved by 0.3 in log (2.46)
		{10, 9, 2 * math.Pow(2, 0.3), 8},   // higher load: kept
		{1, 12, 2 * math.Pow(2, 0.3), 8},   // higher load, even when faster: kept
		{3, 4, 3, 4},                       // lower load: replaced, even when slower
		{2, 4, 3 * math.Pow(2./3, 0.3), 4}, // same load again (2.66)
	} {
		e.updateRef(math.Log(st.obs), st.load, 0.3, 0)
		if ref := math.Exp(e.logRef); math.Abs(ref-st.ref) > 1e-9 || e.refLoad != st.refLoad {
			t.Fatalf("after %v s at load %d: ref %v at %d, want %v at %d", st.obs, st.load, ref, e.refLoad, st.ref, st.refLoad)
		}
	}
	// A job of no measurable time leaves no reference where it would have
	// replaced one, and moves none at its load.
	e.updateRef(math.Inf(-1), 3, 0.3, 0)
	if e.hasRef() {
		t.Fatalf("after 0 s at load 3, under the reference's 4: reference %v s at %d, want none", math.Exp(e.logRef), e.refLoad)
	}
	e.updateRef(math.Log(2), 4, 0.3, 0)
	e.updateRef(math.Inf(-1), 4, 0.3, 0)
	if ref := math.Exp(e.logRef); math.Abs(ref-2) > 1e-9 || e.refLoad != 4 {
		t.Fatalf("after 2 s and then 0 s at load 4: reference %v s at %d, want 2 s at 4", ref, e.refLoad)
	}
}

// TestAdaptiveTarget: one sample moves the limit Smoothing/limit of the
// way to its target, which is where the samples' own load puts it
// (implied = load·Tolerance·baseline/short), not the limit scaled: the
// samples trail the limit (stepLocked). Defaults: Tolerance 1.1, Headroom
// 0.5, Smoothing 0.5; the baseline is 1 unless a case sets it. The law
// reads a baseline under 1 as 1, and one above 1 as it is (lawBase).
func TestAdaptiveTarget(t *testing.T) {
	for _, c := range []struct {
		name                  string
		limit, load, short, x float64
		calm                  float64
		used                  bool
		target                float64 // 0: the limit stays
		baseline              float64 // 0: 1
	}{
		{"congested, the samples from a lower load than the limit: down to implied, 17.6, not 20·1.1/1.125", 20, 18, 1.125, 1.125, 0, true, 17.6, 0},
		{"congested, the limit already under implied (17.4): stays", 17, 19, 1.2, 1.2, 0, true, 0, 0},
		{"congested threefold: at most halved", 20, 20, 3, 3, 0, true, 10, 0},
		{"uncongested, the sample at its reference: the headroom, 16 + 0.5·4", 16, 16, 1.05, 1, 0, true, 18, 0},
		{"uncongested, the sample past the noise: no further than implied", 17, 17, 1.06, 1.0625, 0, true, 17 * 1.1 / 1.06, 0},
		{"uncongested, the sample past the noise, the limit over implied: stays", 18, 17, 1.06, 1.1, 0, true, 0, 0},
		{"uncongested but the seats unused: stays", 16, 16, 1.05, 1, 0, false, 0, 0},
		{"calm for a round: a quarter up whatever the sample", 10, 10, 1, 1.2, 1, true, 15, 0},
		// Against 0.9 a short of 1.05 would read as congested (over
		// 1.1·0.9 = 0.99) and cut the limit to 16·0.99/1.05.
		{"a baseline of 0.9 reads as 1: uncongested, the headroom", 16, 16, 1.05, 1, 0, true, 18, 0.9},
		{"a baseline of 1.1 counts: congested, down to implied, 18·1.21/1.2375", 20, 18, 1.2375, 1, 0, true, 17.6, 1.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, a := lockedAdaptive(t, 16)
			a.limit, a.load, a.logShort, a.calm, a.mark = c.limit, c.load, math.Log(c.short), c.calm, c.limit
			a.probeEvery = 1e9
			if c.baseline != 0 {
				a.logBase = math.Log(c.baseline)
			}
			s.stepLocked(c.used, &job{}, math.Log(c.x), 1)
			want := c.limit
			if c.target != 0 {
				want = c.limit + 0.5/c.limit*(c.target-c.limit)
			}
			if math.Abs(a.limit-want) > 1e-9 {
				t.Errorf("limit %v after the sample, want %v (target %v)", a.limit, want, c.target)
			}
			if got := math.Exp(a.logBase); c.baseline != 0 && math.Abs(got-c.baseline) > 1e-9 {
				t.Errorf("baseline %v after the sample, want it as its samples read it, %v", got, c.baseline)
			}
		})
	}
}

// lockedAdaptive is a new adaptive scheduler (Max 100) and its controller,
// with the scheduler's mutex held until the test ends, for tests that
// drive stepLocked by hand.
func lockedAdaptive(t *testing.T, initial int) (*Scheduler, *adaptive) {
	t.Helper()
	s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 100, Initial: initial}})
	must(t, err)
	t.Cleanup(func() { s.Close(context.Background()) })
	s.mu.Lock()
	t.Cleanup(s.mu.Unlock)
	return s, s.adaptive
}

// endProbe feeds the running probe samples of its own jobs, each of
// inflation m, until it ends.
func endProbe(s *Scheduler, m float64, now int64) {
	for s.adaptive.probing {
		s.probeSampleLocked(&job{probed: true}, math.Log(m), now)
	}
}

// TestAdaptiveZeroSeatTimes: jobs that take no time at all (a handler that
// does not block, in a synctest bubble) have no log inflation, so they
// move none of the controller's geometric averages: a probe whose jobs all
// took none ends, sound, and anchors nothing, and a completion of no time
// leaves short and the baseline as they were, so the target stays a number.
func TestAdaptiveZeroSeatTimes(t *testing.T) {
	s, a := lockedAdaptive(t, 1)
	a.probing, a.saved, a.probeLeft = true, 1, 1
	s.stepLocked(true, &job{probed: true}, math.Inf(-1), 1) // the probe's last job, of no time, and its verdict
	if a.probing || a.logBase != 0 || a.probeEvery != DefaultAdaptiveProbeInterval {
		t.Fatalf("after the probe: probing %v, baseline %v, next in %v rounds (want false, 1 and %d)",
			a.probing, math.Exp(a.logBase), a.probeEvery, DefaultAdaptiveProbeInterval)
	}
	e := &costEntry{logRef: math.Log(0.1), refLoad: 1, at: 1}
	s.sampleLocked(&job{cost: e, load: 1}, math.Inf(-1), 1)
	if a.logShort != 0 || a.logBase != 0 || math.IsNaN(a.limit) || a.limit < 1 || a.limit > 100 {
		t.Fatalf("after a completion of no time: short %v, baseline %v (want 1), limit %v (want a number in [1, 100])", math.Exp(a.logShort), math.Exp(a.logBase), a.limit)
	}
}

// TestAdaptiveExplainedFall: a probe that a fall brought on and that found
// the references sound lets the limit fall to the probe's limit without
// another probe; its mean inflation waits until short has come down to
// Tolerance^1.5 times it, then becomes the baseline; and once the limit is
// back above where the probe found it, a fall is measured from there.
func TestAdaptiveExplainedFall(t *testing.T) {
	cfg, err := AdaptiveConfig{Max: 100}.validate(0)
	must(t, err)
	// The probe found the limit at 14, ran at 7, and its jobs took their
	// references (m = 1) while short was still 2 (the fall goes on).
	a := newAdaptive(cfg)
	a.limit, a.saved, a.mark, a.logShort, a.logBase = 7, 14, 14, math.Log(2), math.Log(1.05)
	a.explainFall(1)
	if a.mark != 7 || a.anchor != 1 || !near(math.Exp(a.logBase), 1.05) {
		t.Fatalf("after the verdict: mark %v (want 7), anchor %v (want 1), baseline %v (want 1.05 until short comes down)", a.mark, a.anchor, math.Exp(a.logBase))
	}
	for _, st := range []struct {
		short, limit   float64
		baseline, mark float64
	}{
		{1.5, 14, 1.05, 7}, // restored: not above where the probe found it
		{1.2, 10, 1.05, 7}, // falling: 1.2 > 1.1^1.5 ≈ 1.154
		{1.15, 9, 1, 7},    // short came down: the baseline is the probe's m
		{1.12, 9, 1, 7},
		{1.1, 14.5, 1, 14}, // back above 14: the fall is over
	} {
		a.logShort, a.limit = math.Log(st.short), st.limit
		a.followFall()
		if !near(math.Exp(a.logBase), st.baseline) || a.mark != st.mark {
			t.Fatalf("short %v, limit %v: baseline %v, mark %v, want %v and %v", st.short, st.limit, math.Exp(a.logBase), a.mark, st.baseline, st.mark)
		}
	}
	if a.anchor != 0 {
		t.Errorf("anchor %v after it became the baseline, want 0", a.anchor)
	}
	// Short low enough at the verdict: the baseline is re-anchored there
	// (probeSampleLocked), nothing waits.
	b := newAdaptive(cfg)
	b.limit, b.saved, b.mark, b.logShort = 7, 14, 14, math.Log(1.1)
	b.explainFall(1)
	if b.anchor != 0 || b.mark != 7 {
		t.Errorf("verdict with short 1.1: anchor %v (want 0), mark %v (want 7)", b.anchor, b.mark)
	}
}

// TestAdaptiveFasterProbeAnchors: a probe whose jobs ran at half their
// references (m = 0.5, congested references) while short was low enough
// re-anchors the baseline at m, unless it started while the jobs at the
// limit had run faster than their references for a round (fastRound,
// noteFaster): then its m is that of references being taken again.
func TestAdaptiveFasterProbeAnchors(t *testing.T) {
	for _, faster := range []bool{false, true} {
		s, a := lockedAdaptive(t, 16)
		a.probeEvery = 1e9
		a.faster = 0
		if faster {
			a.faster = 1
		}
		s.startProbeLocked(1)
		a.logShort = math.Log(0.55) // within Tolerance^1.5 of m: the load costs nothing
		a.probeLeft = 1
		s.probeSampleLocked(&job{probed: true}, math.Log(0.5), 1)
		want := 0.5
		if faster {
			want = 1
		}
		if a.probing || math.Abs(math.Exp(a.logBase)-want) > 1e-9 || a.probeEvery != minProbeEvery || a.held != faster {
			t.Errorf("started after a fast round %v: after the verdict probing %v, baseline %v (want %v), next probe in %v rounds (want %d), held %v (want %v)",
				faster, a.probing, math.Exp(a.logBase), want, a.probeEvery, minProbeEvery, a.held, faster)
		}
	}
}

// TestAdaptiveHeld: a probe that a fast round brought on and that finds
// the references congested holds the limit: calm samples do not raise it,
// a congested verdict from a probe that came on its own keeps it held and
// anchors nothing, and the first verdict that is not congested lets it
// grow again. A congested step still lowers a held limit.
func TestAdaptiveHeld(t *testing.T) {
	s, a := lockedAdaptive(t, 16)
	verdict := func(x float64, fast bool) {
		t.Helper()
		a.probeEvery, a.faster = 1e9, 0
		if fast {
			a.faster = 1
		}
		s.startProbeLocked(1)
		a.logShort, a.probeLeft = math.Log(x*1.1), 1 // short within Tolerance^1.5 of m: a verdict may anchor
		s.probeSampleLocked(&job{probed: true}, math.Log(x), 1)
		a.logShort, a.faster = 0, 0
	}
	calm := func() (grew bool) {
		t.Helper()
		before := a.limit
		for range 64 {
			s.stepLocked(true, &job{}, 0, 1) // inflation 1
		}
		return a.limit > before
	}
	verdict(0.5, true)
	if !a.held || a.logBase != 0 {
		t.Fatalf("congested verdict after a fast round: held %v, baseline %v (want true and 1)", a.held, math.Exp(a.logBase))
	}
	if snap := a.snapshotLocked(s); !snap.Held || !debugView(Snapshot{Adaptive: snap}).Adaptive.Held {
		t.Fatal("held, but the snapshot or the debug page's JSON says not")
	}
	if calm() {
		t.Fatalf("held: the limit grew to %v on calm samples", a.limit)
	}
	verdict(0.5, false)
	if !a.held || a.logBase != 0 {
		t.Fatalf("congested verdict while held: held %v, baseline %v (want true and 1)", a.held, math.Exp(a.logBase))
	}
	before := a.limit
	a.logShort = math.Log(2) // congested: Tolerance·baseline is 1.3
	s.stepLocked(true, &job{}, math.Log(2), 1)
	if a.limit >= before {
		t.Fatalf("held: a congested step left the limit at %v (was %v)", a.limit, before)
	}
	a.logShort = 0
	verdict(1, false)
	if a.held {
		t.Fatal("still held after a sound verdict")
	}
	if !calm() {
		t.Fatalf("after a sound verdict the limit stayed at %v on calm samples", a.limit)
	}
	// A congested verdict from a probe that came on its own holds nothing.
	verdict(0.5, false)
	if a.held {
		t.Fatal("held after a congested verdict without a fast round")
	}
}

// TestAdaptiveSoundAfterStale: after a stale verdict the probes go quiet
// only on the second sound verdict in a row; the first brings one more
// probe (its jobs may all be ones whose references were taken again).
func TestAdaptiveSoundAfterStale(t *testing.T) {
	s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 100, Initial: 20}})
	must(t, err)
	defer s.Close(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.adaptive
	quiet := float64(a.cfg.ProbeInterval)
	j := &job{probed: true}
	for i, st := range []struct {
		x     float64 // the inflation of every job of the probe
		every float64 // rounds to the next probe after its verdict
		epoch uint32
	}{
		{1, quiet, 0},         // sound
		{2, minProbeEvery, 1}, // stale
		{1, minProbeEvery, 1}, // sound, the first after a stale one: once more
		{1, quiet, 1},         // sound again
		{2, minProbeEvery, 2},
		{2, minProbeEvery, 3},
		{1, minProbeEvery, 3},
		{2, minProbeEvery, 4}, // stale again before the confirmation
		{1, minProbeEvery, 4},
		{1, quiet, 4},
	} {
		a.logShort, a.logBase = math.Log(st.x), math.Log(st.x) // so that the probe's m anchors
		s.startProbeLocked(s.now())
		for a.probing {
			s.probeSampleLocked(j, math.Log(st.x), s.now())
		}
		if a.probeEvery != st.every || a.epoch != st.epoch {
			t.Fatalf("probe %d (inflation %v): next in %v rounds, epoch %d; want %v and %d", i, st.x, a.probeEvery, a.epoch, st.every, st.epoch)
		}
	}
}

// TestAdaptiveFloor: a probe that finds the references sound sets a floor
// at its own limit less Tolerance; a congested step cuts no lower than it
// while the limit is above it, and brings the next probe within
// minProbeEvery rounds; a probe that finds them stale or congested clears
// it; a limit already under it (pressure) is cut as before.
func TestAdaptiveFloor(t *testing.T) {
	s, a := lockedAdaptive(t, 20)
	probe := func(x float64) {
		a.logShort, a.logBase = math.Log(x), math.Log(x)
		s.startProbeLocked(s.now())
		endProbe(s, x, s.now())
	}
	probe(1) // sound, at 10 seats
	if want := 10 / a.cfg.Tolerance; math.Abs(a.floor-want) > 1e-9 || a.limit != 20 {
		t.Fatalf("after a sound probe from 20: floor %v, limit %v; want %v and 20", a.floor, a.limit, want)
	}
	// Congested threefold at 20: the target would be 10 (halved); the
	// floor is 9.09, so the cut is as before.
	a.limit, a.load, a.logShort, a.logBase, a.mark, a.probeEvery = 20, 20, math.Log(3), 0, 20, 1e9
	s.stepLocked(true, &job{}, math.Log(3), 1)
	if want := 20 + 0.5/20*(10-20); math.Abs(a.limit-want) > 1e-9 || a.probeEvery != 1e9 {
		t.Fatalf("cut above the floor: limit %v, next probe in %v rounds; want %v and 1e9", a.limit, a.probeEvery, want)
	}
	// At 12, congested threefold: the target 6 is under the floor, so 9.09,
	// and the next probe comes soon.
	a.limit, a.load, a.mark, a.probeEvery = 12, 12, 12, 1e9
	s.stepLocked(true, &job{}, math.Log(3), 1)
	if want := 12 + 0.5/12*(a.floor-12); math.Abs(a.limit-want) > 1e-9 || a.probeEvery != minProbeEvery {
		t.Fatalf("cut stopped by the floor: limit %v, next probe in %v rounds; want %v and %d", a.limit, a.probeEvery, want, minProbeEvery)
	}
	// Under the floor already: cut as if there were none.
	a.limit, a.load, a.mark, a.probeEvery = 8, 8, 8, 1e9
	s.stepLocked(true, &job{}, math.Log(3), 1)
	if want := 8 + 0.5/8*(4-8); math.Abs(a.limit-want) > 1e-9 {
		t.Fatalf("cut under the floor: limit %v, want %v", a.limit, want)
	}
	// A stale verdict clears the floor, and so does a congested one.
	for _, x := range []float64{2, 0.5} {
		a.limit = 20
		probe(1)
		probe(1)
		if a.floor == 0 {
			t.Fatalf("no floor after two sound probes")
		}
		probe(x)
		if a.floor != 0 {
			t.Errorf("after a probe of inflation %v: floor %v, want none", x, a.floor)
		}
	}
}

// TestAdaptiveBeyondChance: a probe's mean inflation anchors the baseline
// as it is where seat times do not vary; where they vary, moved back by
// what chance explains of its gap from the baseline, and not at all when
// chance explains all of it.
func TestAdaptiveBeyondChance(t *testing.T) {
	for _, c := range []struct {
		name  string
		noise float64 // variance of a job's log seat time
		m     float64 // the probe's geometric mean inflation
		want  float64
	}{
		{"no noise: m itself", 0, 0.85, 0.85},
		{"spread 0.5, m within chance (gap 0.16, se 0.24): the baseline", 0.25, 0.85, 1},
		{"spread 0.5, m twice: most of the way", 0.25, 2, math.Exp(math.Log(2) * (1 - 0.5/9/(math.Log(2)*math.Log(2))))},
	} {
		a := &adaptive{noise: c.noise, probeN: 9} // the baseline 1 (log 0)
		if got := a.beyondChance(math.Log(c.m)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAdaptiveReferenceCeiling: a completion takes or moves a reference
// only at a load of at most limit/Tolerance (the ceiling), or, above it,
// when it ran at a lower load than the reference's and faster. Each step
// sets the limit with SetAdaptiveBounds, so that the ceiling is known when
// the job completes (the first to, in its step).
func TestAdaptiveReferenceCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, run, ref := referenceHarness(t)
		for _, st := range []struct {
			step  string
			limit int // pinned: the ceiling is limit/1.1
			id    string
			load  int
			d     time.Duration
			stale bool       // a probe found the references stale just before
			want  [2]float64 // reference (s), its load
		}{
			{"first, under the ceiling (18.2): taken", 20, "r", 15, 2 * time.Second, false, [2]float64{2, 15}},
			{"above the ceiling (12.7), lower load, faster: replaced", 14, "r", 14, time.Second, false, [2]float64{1, 14}},
			{"above the ceiling, lower load, slower: kept", 14, "r", 13, 3 * time.Second, false, [2]float64{1, 14}},
			{"under the ceiling, lower load, slower: replaced", 14, "r", 12, 3 * time.Second, false, [2]float64{3, 12}},
			{"under the ceiling, same load: moved by alpha in log", 14, "r", 12, time.Second, false, [2]float64{3 * math.Pow(1./3, 0.3), 12}},
			{"first, above the ceiling: not taken", 14, "q", 14, time.Second, false, [2]float64{0, 0}},
			{"then under it: taken", 14, "q", 5, time.Second, false, [2]float64{1, 5}},
			{"above the ceiling (3.6), lower load, slower: kept", 4, "q", 4, 2 * time.Second, false, [2]float64{1, 5}},
			{"the same once a probe found the references stale: replaced", 4, "q", 4, 2 * time.Second, true, [2]float64{2, 4}},
			{"taken since that verdict: slower at a lower load above the ceiling, kept", 3, "q", 3, 3 * time.Second, false, [2]float64{2, 4}},
			{"same load above the ceiling (10.9): kept, stale or not", 12, "r", 12, time.Second, true, [2]float64{3 * math.Pow(1./3, 0.3), 12}},
		} {
			pinLimit(t, s, st.limit)
			if st.stale {
				s.mu.Lock()
				s.adaptive.epoch++ // as probeSampleLocked does on that verdict
				s.mu.Unlock()
			}
			run(st.id, st.load, st.d)
			checkInvariants(t, s)
			if got := ref(st.id); math.Abs(got[0]-st.want[0]) > 1e-9 || got[1] != st.want[1] {
				t.Fatalf("%s: reference of %s %v s at load %v, want %v s at %v", st.step, st.id, got[0], got[1], st.want[0], st.want[1])
			}
		}
	})
}

// referenceHarness returns an adaptive Scheduler (Max 20, Initial 20) with
// a type "t", closed at the end of the test; run, which completes a job of
// job ID id after d, admitted with load seats in use (itself and load-1
// fillers held as long, each of a job ID seen once, which gives no
// sample); and ref, the reference of id (seconds, load). Inside a synctest
// bubble.
func referenceHarness(t *testing.T) (*Scheduler, func(id string, load int, d time.Duration), func(id string) [2]float64) {
	s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 20, Initial: 20}, TierLimits: map[Priority]int{10: 20}})
	must(t, err)
	t.Cleanup(func() { s.Close(context.Background()) })
	must(t, s.RegisterType("t", JobTypeConfig{Priority: 10}))
	acquire := func(id string) *Permit {
		p, err := s.Acquire(context.Background(), Request{Type: "t", JobID: id, FairnessKey: "k"})
		must(t, err)
		return p
	}
	fresh := 0
	run := func(id string, load int, d time.Duration) {
		var fill []*Permit
		for range load - 1 {
			fresh++
			fill = append(fill, acquire(fmt.Sprint("once-", fresh)))
		}
		p := acquire(id)
		time.Sleep(d)
		p.Release()
		for _, f := range fill {
			f.Release()
		}
	}
	ref := func(id string) [2]float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		e, ok := s.costs.Peek(costKey{"t", id})
		if !ok || !e.hasRef() {
			return [2]float64{}
		}
		return [2]float64{math.Exp(e.logRef), float64(e.refLoad)}
	}
	return s, run, ref
}

// pinLimit sets s's adaptive limit to limit, with Min 1 (the ceilings'
// floor) and Max limit.
func pinLimit(t *testing.T, s *Scheduler, limit int) {
	t.Helper()
	must(t, s.SetAdaptiveBounds(limit, limit))
	must(t, s.SetAdaptiveBounds(1, limit))
}

// TestAdaptiveLeftBehind: at an uncongested load, a completion takes
// again a reference that its job's own cost estimate has left behind
// (under 1/Tolerance of it, beyond chance), once the noise is known
// (leftBehind), even at a higher load than the reference's; not while the
// noise is unknown, nor for an estimate within Tolerance of the
// reference, nor above the ceiling. The job gets cheaper: its estimate
// (the cost EMA, alpha 0.3) follows, its reference is left behind.
func TestAdaptiveLeftBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, run, ref := referenceHarness(t)
		run("r", 2, 2*time.Second) // the reference: 2 s at load 2
		for _, st := range []struct {
			step  string
			limit int // pinned: the ceiling is limit/1.1
			pairs uint64
			load  int
			d     time.Duration
			n     int        // completions
			want  [2]float64 // reference (s), its load
		}{
			{"1 s at load 5, noise not known: kept", 20, 0, 5, time.Second, 4, [2]float64{2, 2}},
			{"the same, noise known: taken again at the higher load", 20, 1 / noiseAlpha, 5, time.Second, 1, [2]float64{1, 5}},
			{"the estimate within Tolerance of it: kept", 20, 1 / noiseAlpha, 8, time.Second / 2, 1, [2]float64{1, 5}},
			{"0.2 s above the ceiling (4.5): kept", 5, 1 / noiseAlpha, 5, time.Second / 5, 4, [2]float64{1, 5}},
			{"0.2 s at its load under the ceiling: taken again, not moved by alpha", 20, 1 / noiseAlpha, 5, time.Second / 5, 1, [2]float64{0.2, 5}},
		} {
			pinLimit(t, s, st.limit)
			s.mu.Lock()
			s.adaptive.pairs = st.pairs
			s.mu.Unlock()
			for range st.n {
				run("r", st.load, st.d)
			}
			checkInvariants(t, s)
			if got := ref("r"); math.Abs(got[0]-st.want[0]) > 1e-9 || got[1] != st.want[1] {
				t.Fatalf("%s: reference %v s at load %v, want %v s at %v", st.step, got[0], got[1], st.want[0], st.want[1])
			}
		}
	})
}

// TestAdaptiveBaselineCeiling: a sample feeds the baseline only at a load
// of at most the reference ceiling over sqrt(Tolerance)
// (baselineCeiling: 20/1.1^1.5 = 17.3 at a limit of 20), while the
// reference ceiling (20/1.1 = 18.2) still takes and moves references.
func TestAdaptiveBaselineCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, harnessRun, ref := referenceHarness(t)
		run := func(load int, d time.Duration) {
			pinLimit(t, s, 20)
			harnessRun("b", load, d)
			checkInvariants(t, s)
		}
		base := func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.adaptive.logBase
		}
		run(18, time.Second)
		if got := ref("b"); got != [2]float64{1, 18} {
			t.Fatalf("first at load 18, under the reference ceiling: reference %v s at load %v, want 1 s at 18", got[0], got[1])
		}
		before := base()
		run(18, 2*time.Second)
		if got := base(); got != before {
			t.Errorf("2 s at load 18, between the ceilings: the baseline moved from %v to %v in log", before, got)
		}
		if got := ref("b"); got[1] != 18 || got[0] <= 1 {
			t.Errorf("2 s at load 18: reference %v s at load %v, want moved towards 2 s at 18", got[0], got[1])
		}
		run(17, 2*time.Second)
		if got := base(); got <= before {
			t.Errorf("2 s at load 17, under the baseline's ceiling: the baseline %v in log, want above %v", got, before)
		}
	})
}

// oneJobAtATime returns an adaptive Scheduler (Max 8, Initial 4) with a
// type "t", closed at the end of the test, and run, which runs a job of
// job ID id on key "k" for d: one job at a time, each at load 1, with the
// seats never used, so that the limit stays and no probe starts. Inside a
// synctest bubble.
func oneJobAtATime(t *testing.T) (*Scheduler, func(id string, d time.Duration)) {
	s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 8, Initial: 4}})
	must(t, err)
	t.Cleanup(func() { s.Close(context.Background()) })
	must(t, s.RegisterType("t", JobTypeConfig{Priority: 10}))
	return s, func(id string, d time.Duration) {
		p, err := s.Acquire(context.Background(), Request{Type: "t", JobID: id, FairnessKey: "k"})
		must(t, err)
		time.Sleep(d)
		p.Release()
	}
}

// TestAdaptiveSamples: a job of a (type, job ID) without a reference is no
// sample (weak), the next one is; a seat handed back by a waiter that gave
// up is neither.
func TestAdaptiveSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, run := oneJobAtATime(t)
		ctx := context.Background()
		state := func() [2]uint64 {
			a := s.Snapshot().Adaptive
			return [2]uint64{a.Samples, a.Weak}
		}
		for _, st := range []struct {
			step string
			do   func()
			want [2]uint64 // samples, weak
		}{
			{"first of r1: no reference", func() { run("r1", time.Second) }, [2]uint64{0, 1}},
			{"second of r1: a sample", func() { run("r1", time.Second) }, [2]uint64{1, 1}},
			{"first of r2: no reference", func() { run("r2", time.Second) }, [2]uint64{1, 2}},
			{"seat handed back: nothing", func() {
				p, err := s.Acquire(ctx, Request{Type: "t", JobID: "r1", FairnessKey: "k"})
				must(t, err)
				time.Sleep(time.Second)
				if _, err := s.abandon(p.j, context.Canceled, false); err != context.Canceled {
					t.Fatalf("abandon = %v", err)
				}
			}, [2]uint64{1, 2}},
		} {
			st.do()
			checkInvariants(t, s)
			if got := state(); got != st.want {
				t.Fatalf("%s: samples, weak = %v, want %v", st.step, got, st.want)
			}
		}
	})
}

// TestAdaptiveMeasuresRef: a sample Tolerance times faster than its
// reference stays out of the baseline, and out of short once the noise
// estimate rests on 1/noiseAlpha pairs (measuresRef); before, it moves
// short. A sample at its reference moves short either way.
func TestAdaptiveMeasuresRef(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, runID := oneJobAtATime(t)
		run := func(d time.Duration) { runID("r", d) }
		state := func() (short, baseline float64) {
			a := s.Snapshot().Adaptive
			return a.Inflation, a.Baseline
		}
		setPairs := func(n uint64) {
			s.mu.Lock()
			s.adaptive.pairs = n
			s.mu.Unlock()
		}
		run(time.Second) // takes the reference
		run(time.Second) // a sample at it
		for _, st := range []struct {
			step      string
			pairs     uint64
			d         time.Duration
			moveShort bool
		}{
			{"twice faster, noise not known", 1/noiseAlpha - 2, time.Second / 2, true},
			{"twice faster, noise known", 1 / noiseAlpha, time.Second / 2, false},
			{"at its reference, noise known", 1 / noiseAlpha, time.Second, true},
		} {
			setPairs(st.pairs)
			short0, base0 := state()
			run(st.d)
			short1, base1 := state()
			checkInvariants(t, s)
			if moved := short1 != short0; moved != st.moveShort {
				t.Errorf("%s: short %v -> %v, want moved = %v", st.step, short0, short1, st.moveShort)
			}
			if st.d < time.Second && base1 != base0 {
				t.Errorf("%s: baseline %v -> %v, want it unmoved", st.step, base0, base1)
			}
		}
	})
}

// TestAdaptiveNoteFaster: a round of samples (limit of them) for which
// all, the inflation at the limit with the samples that measure their
// references, stays below baseline/Tolerance by two of short's standard
// errors brings the next probe within minProbeEvery rounds, once the
// noise is known; a sample above the cut starts the round again.
func TestAdaptiveNoteFaster(t *testing.T) {
	const limit = 8 // a sample adds 1/8 of a round, exactly
	for _, c := range []struct {
		name  string
		pairs uint64
		noise float64
		all   []float64 // all at each sample
		probe bool
	}{
		{"a round under 1/Tolerance", 100, 0, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, true},
		{"less than a round", 100, 0, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, false},
		{"a round, the noise not known", 99, 0, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, false},
		{"a round at 1/Tolerance", 100, 0, []float64{1 / 1.1, 1 / 1.1, 1 / 1.1, 1 / 1.1, 1 / 1.1, 1 / 1.1, 1 / 1.1, 1 / 1.1}, false},
		{"a round, one sample above the cut", 100, 0, []float64{0.5, 0.5, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 0.5}, false},
		// noise 0.05: shortError sqrt(expm1(0.1)/8) = 0.115, the cut
		// e^-0.229/1.1 = 0.723.
		{"a round within chance", 100, 0.05, []float64{0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75}, false},
		{"a round beyond chance", 100, 0.05, []float64{0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7}, true},
	} {
		a := newAdaptive(AdaptiveConfig{Tolerance: 1.1})
		a.limit, a.noise, a.pairs, a.probeEvery = limit, c.noise, c.pairs, 1000
		for _, all := range c.all {
			a.logAll = math.Log(all)
			a.noteFaster()
		}
		if got := a.probeEvery == minProbeEvery; got != c.probe {
			t.Errorf("%s: next probe in %v rounds, want it brought to %d = %v", c.name, a.probeEvery, minProbeEvery, c.probe)
		}
	}
}

// TestAdaptiveNoteRise: a rise past riseBy times the highest limit held
// before the last probe brings the next probe at once, if the jobs run
// faster than their references and the probes have been quiet for
// riseQuiet rounds (noteRise); a congested verdict from that probe starts
// an epoch, so that the next probes' jobs take their references again
// whatever their load, and does not hold the limit.
func TestAdaptiveNoteRise(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit float64 // high is 10
		since float64 // rounds since the last probe
		all   float64
		probe bool
	}{
		{"past the highest, quiet, faster", 16, riseQuiet, 0.5, true},
		{"not past riseBy times the highest", 14.9, riseQuiet, 0.5, false},
		{"quiet for less than riseQuiet rounds", 16, riseQuiet - 1, 0.5, false},
		{"jobs at their references", 16, riseQuiet, 1, false},
	} {
		a := newAdaptive(AdaptiveConfig{Tolerance: 1.1})
		a.limit, a.high, a.sinceProbe, a.probeEvery, a.logAll = c.limit, 10, c.since, 1000, math.Log(c.all)
		a.noteRise()
		if got := a.probeEvery == minProbeEvery; got != c.probe {
			t.Errorf("%s: next probe in %v rounds; want a probe brought on = %v", c.name, a.probeEvery, c.probe)
		}
	}

	s, a := lockedAdaptive(t, 16)
	a.high, a.sinceProbe, a.probeEvery, a.logAll = 16, riseQuiet, 1000, math.Log(0.5)
	a.calm = 1
	for range 64 { // calm samples at half their references' time: the limit grows past 24
		s.stepLocked(true, &job{}, math.Log(0.5), 1)
		if a.probing {
			break
		}
	}
	if !a.probing {
		t.Fatalf("the limit rose to %v past %v times the highest (%v), but no probe started", a.limit, riseBy, a.high)
	}
	if a.high < 24 {
		t.Fatalf("the probe started from %v, but the highest limit it keeps is %v", a.saved, a.high)
	}
	epoch := a.epoch
	a.logShort, a.probeLeft = math.Log(0.5*1.1), 1
	s.probeSampleLocked(&job{probed: true}, math.Log(0.5), 1) // the jobs ran at half their references: congested
	if a.held || a.epoch != epoch+1 {
		t.Fatalf("congested verdict of the rise's probe: held %v, epoch %d (want false, %d)", a.held, a.epoch, epoch+1)
	}

	// A probe's job at an uncongested load takes again a reference from
	// before that verdict, at a higher load than the reference's; a job
	// the probe did not admit does not.
	for _, probed := range []bool{true, false} {
		e := &costEntry{logRef: math.Log(2), refLoad: 3, at: 1}
		lobs := math.Log(1.0)
		if take := s.sampleLocked(&job{cost: e, load: 8, probed: probed}, lobs, 1); take {
			e.updateRef(lobs, 8, 0.3, a.epoch)
		}
		want := [2]float64{2, 3}
		if probed {
			want = [2]float64{1, 8}
		}
		if got := [2]float64{math.Exp(e.logRef), float64(e.refLoad)}; math.Abs(got[0]-want[0]) > 1e-9 || got[1] != want[1] {
			t.Errorf("probed %v: reference %v s at load %v after a sample of 1 s at load 8, want %v s at %v", probed, got[0], got[1], want[0], want[1])
		}
	}
}

// TestAdaptiveRestore: a probe that finds the server saturated well below
// the limit restores it only to Tolerance times the capacity its two loads
// imply (restoreTo): the jobs at the limit ran at short, read as the probe
// started, its own at m, so the capacity is at most load·m/short; never
// below the probe's own limit nor above the limit it started from, and not
// where chance explains it, the noise is not known yet, or short was more
// than Tolerance² times the baseline (the law sees the congestion).
func TestAdaptiveRestore(t *testing.T) {
	for _, c := range []struct {
		name         string
		short, m     float64 // inflation at the limit (40 seats) and of the probe's jobs (at 20)
		base         float64 // the baseline
		noise        float64 // variance of a job's log seat time
		noiseUnknown bool
		want         float64
	}{
		{"saturated at the limit, not at the probe's", 1.2, 0.66, 1, 0, false, 1.1 * 40 * 0.66 / 1.2},
		{"saturated at both: no lower than the probe's limit", 1.2, 0.3, 1, 0, false, 20},
		{"a little below the limit", 1.2, 0.9, 1, 0, false, 1.1 * 40 * 0.9 / 1.2},
		{"above the limit: restored as it was", 1.2, 1.2, 1, 0, false, 40},
		{"chance explains it", 1.2, 0.66, 1, 1, false, 40},
		{"noise not known yet", 1.2, 0.66, 1, 0, true, 40},
		{"the law sees the congestion", 1.3, 0.7, 1, 0, false, 40},
		{"the law does not, against a higher baseline", 1.3, 0.7, 1.1, 0, false, 1.1 * 40 * 0.7 / 1.3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, a := lockedAdaptive(t, 40)
			a.noise, a.pairs = c.noise, 1/noiseAlpha
			if c.noiseUnknown {
				a.pairs = 0
			}
			a.probeEvery, a.load, a.logShort, a.logBase = 1e9, 40, math.Log(c.short), math.Log(c.base)
			s.startProbeLocked(1)
			a.logShort = 0 // short as the probe started counts, not as it ends
			endProbe(s, c.m, 1)
			if math.Abs(a.limit-c.want) > 1e-9 {
				t.Fatalf("restored to %v, want %v", a.limit, c.want)
			}
		})
	}
}

// TestAdaptiveCutHolds: a probe that restores the limit more than a
// Tolerance below what it halved (restoreTo) holds the limit it restores:
// calm samples do not grow it, and the next probe comes minProbeEvery
// rounds on. A smaller cut, as the law's own steps around Tolerance·C
// leave, holds nothing; nor does a probe that restores all it halved, and
// it ends the hold.
func TestAdaptiveCutHolds(t *testing.T) {
	s, a := lockedAdaptive(t, 40)
	a.noise, a.pairs = 0, 1/noiseAlpha
	probe := func(short, base, m float64) {
		t.Helper()
		a.limit, a.load, a.logShort, a.logBase = 40, 40, math.Log(short), math.Log(base)
		s.startProbeLocked(1)
		endProbe(s, m, 1)
	}
	calm := func() float64 {
		t.Helper()
		before := a.limit
		a.logShort = a.logBase
		for range 10 {
			s.stepLocked(true, &job{}, a.logBase, 1)
		}
		return a.limit - before
	}

	// Sound references, the server saturated at the limit, not at the
	// probe's: within a Tolerance of the limit, no hold.
	probe(1.2, 1, 1)
	if want := 1.1 * 40 / 1.2; math.Abs(a.limit-want) > 1e-9 || a.cut {
		t.Fatalf("after a cut to %.2f: limit %.2f, cut %v (want %.2f, false)", want, a.limit, a.cut, want)
	}
	// Further below it: held.
	probe(1.3, 1.1, 1)
	want := 1.1 * 40 / 1.3
	if math.Abs(a.limit-want) > 1e-9 || !a.cut || a.probeEvery != minProbeEvery {
		t.Fatalf("after a cut to %.2f: limit %.2f, cut %v, next probe in %v rounds (want %.2f, true, %d)", want, a.limit, a.cut, a.probeEvery, want, minProbeEvery)
	}
	if grew := calm(); grew != 0 {
		t.Fatalf("calm samples grew a cut limit by %.2f", grew)
	}
	if !a.snapshotLocked(s).Held {
		t.Fatalf("Snapshot's Held is false while a cut holds the limit")
	}

	probe(1.2, 1, 1.2) // the load costs nothing at the limit: restored as it was
	if a.limit != 40 || a.cut || a.snapshotLocked(s).Held {
		t.Fatalf("a probe that restored all it halved: limit %.2f, cut %v, Held %v (want 40, false, false)", a.limit, a.cut, a.snapshotLocked(s).Held)
	}
	if grew := calm(); grew <= 0 {
		t.Fatalf("calm samples did not grow the limit once the hold ended (%.2f)", grew)
	}
}

// TestAdaptiveProbeClock: the probe clock counts every sample, used or
// not, so a limit that stopped growing where its seats are no longer used
// is still probed.
func TestAdaptiveProbeClock(t *testing.T) {
	s, a := lockedAdaptive(t, 40)
	a.probeEvery = minProbeEvery
	for i := 0; !a.probing; i++ {
		if i > minProbeEvery*40 {
			t.Fatalf("no probe after %d samples, none of them used (%v rounds counted)", i, a.sinceProbe)
		}
		s.stepLocked(false, &job{}, 0, 1)
	}
}

// TestAdaptivePressure: each reading of the pressure source at 1 or more
// multiplies the limit by PressureBackoff, and the limit does not grow
// meanwhile.
func TestAdaptivePressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		pressure := 1.0
		src := PressureFunc(func() float64 { mu.Lock(); defer mu.Unlock(); return pressure })
		s, err := New(Config{
			Adaptive: &AdaptiveConfig{Max: 20, Initial: 10},
			Pressure: &PressureConfig{Source: src, Threshold: 1, Interval: 100 * time.Millisecond},
		})
		must(t, err)
		defer s.Close(context.Background())
		must(t, s.RegisterType("t", JobTypeConfig{Priority: 10}))
		tick := func() {
			p, err := s.Acquire(context.Background(), Request{Type: "t", JobID: "x"})
			must(t, err)
			time.Sleep(100 * time.Millisecond)
			p.Release()
		}
		for range 3 {
			tick()
		}
		snap := s.Snapshot()
		if want := 10 * 0.9 * 0.9 * 0.9; math.Abs(snap.Adaptive.Limit-want) > 1e-9 || snap.Capacity != 7 {
			t.Fatalf("after 3 readings at 1: limit %v (capacity %d), want %v", snap.Adaptive.Limit, snap.Capacity, want)
		}
		for _, c := range snap.Adaptive.History {
			if c.Reason != CapacityPressure {
				t.Errorf("change %+v, want reason %q", c, CapacityPressure)
			}
		}
		mu.Lock()
		pressure = 0.5
		mu.Unlock()
		tick()
		if l := s.Snapshot().Adaptive.Limit; l < snap.Adaptive.Limit {
			t.Errorf("limit fell to %v at pressure 0.5", l)
		}
	})
}

// TestAdaptiveShedding: once the foreground requests admitted over an
// interval all waited more than QueueDelayTarget, the key holding the most
// is refused with ErrOverloaded (PerKey false): its new arrivals at once,
// its queued requests that waited past the target when they reach the head.
// A light key is neither.
func TestAdaptiveShedding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 1, QueueDelayTarget: 10 * time.Millisecond}}, tel.options()...)
		must(t, err)
		defer s.Close(context.Background())
		must(t, s.RegisterType("t", JobTypeConfig{Priority: 10}))
		ctx := context.Background()
		type result struct {
			key string
			p   *Permit
			err error
		}
		results := make(chan result, 10)
		acquire := func(key string) {
			go func() {
				p, err := s.Acquire(ctx, Request{Type: "t", JobID: key, FairnessKey: key})
				results <- result{key, p, err}
			}()
			synctest.Wait()
		}
		next := func() result {
			synctest.Wait()
			select {
			case r := <-results:
				return r
			default:
				t.Fatal("no request ended")
				return result{}
			}
		}
		acquire("heavy") // runs
		first := next()
		for range 3 {
			acquire("heavy") // queued
		}
		time.Sleep(200 * time.Millisecond)
		first.p.Release() // the next heavy request waited 200ms: the interval is over the target
		second := next()
		if second.err != nil {
			t.Fatalf("second heavy request: %v", second.err)
		}
		if s.Snapshot().Adaptive.Shedding {
			t.Fatal("shedding before the interval ended")
		}
		time.Sleep(DefaultQueueDelayInterval)
		acquire("heavy")
		r := next()
		var rej *RejectedError
		if !errors.As(r.err, &rej) || rej.Reason != ErrOverloaded || rej.PerKey || rej.RetryAfter <= 0 {
			t.Fatalf("heavy arrival while shedding: %v, want a server-scope ErrOverloaded with a retry hint", r.err)
		}
		if !s.Snapshot().Adaptive.Shedding {
			t.Error("Snapshot does not say it is shedding")
		}
		acquire("light") // below its share: queued
		select {
		case r := <-results:
			t.Fatalf("light request ended at arrival: %+v", r)
		default:
		}
		// Light goes first (fairness); when it is done, the two queued heavy
		// requests, which waited past the target, are refused at the head.
		second.p.Release()
		var got []string
		for range 3 {
			r := next()
			switch {
			case r.err == nil:
				got = append(got, r.key+" admitted")
				r.p.Release()
			case errors.Is(r.err, ErrOverloaded):
				got = append(got, r.key+" overloaded")
			default:
				t.Fatalf("%s: %v", r.key, r.err)
			}
		}
		want := []string{"light admitted", "heavy overloaded", "heavy overloaded"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("after the release (-want +got):\n%s", d)
		}
		if c := s.Snapshot().Counters; c.RejectedOverload != 3 {
			t.Errorf("RejectedOverload = %d, want 3", c.RejectedOverload)
		}
		wantValue(t, tel.collect(t), "fairseat.requests", 3, attrResult.String("rejected_overloaded"))
		checkInvariants(t, s)
	})
}

// TestAdaptiveMetrics: fairseat.seats.limit is the adaptive limit, and
// fairseat.seats.limit.changes counts its changes by reason.
func TestAdaptiveMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s, err := New(Config{Adaptive: &AdaptiveConfig{Max: 16, Initial: 8}}, tel.options()...)
		must(t, err)
		defer s.Close(context.Background())
		must(t, s.SetAdaptiveBounds(2, 4)) // 8 -> 4
		must(t, s.SetAdaptiveBounds(6, 6)) // 4 -> 6
		m := tel.collect(t)
		wantValue(t, m, "fairseat.seats.limit", 6)
		wantValue(t, m, "fairseat.seats.limit.changes", 2, attrReason.String(string(CapacityOperator)))
		for _, r := range []CapacityReason{CapacityIncrease, CapacityDecrease, CapacityPressure, CapacityProbe} {
			wantValue(t, m, "fairseat.seats.limit.changes", 0, attrReason.String(string(r)))
		}

		tel = newTelemetry(t) // a fixed capacity: the limit, no changes
		fixed, err := New(Config{Capacity: 3}, tel.options()...)
		must(t, err)
		defer fixed.Close(context.Background())
		m = tel.collect(t)
		wantValue(t, m, "fairseat.seats.limit", 3)
		if mt, ok := m["fairseat.seats.limit.changes"]; ok && len(mt.Points) > 0 {
			t.Errorf("a fixed capacity reports limit changes: %+v", mt.Points)
		}
	})
}
