package admission

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Bad input to every exported function: nil, zero, negative, NaN and
// oversized values return an error wrapping the sentinel the package doc's
// "Errors and panics" names (and leave the scheduler as it was), or panic
// as documented there.
func TestBadInput(t *testing.T) {
	s := newTestScheduler(t, Config{Capacity: 2, Keys: map[string]KeyPolicy{"a": {MinSeats: 1}}}, JobTypeConfig{}, JobTypeConfig{})
	fn := func(context.Context) error { return nil }
	var nilCtx context.Context
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	huge := strings.Repeat("x", 1<<20)
	// A scheduler whose jobs become urgent at 30, where no job may start.
	aged, err := New(Config{Capacity: 2, Aging: &AgingConfig{Interval: time.Second, Urgent: 30}})
	must(t, err)
	must(t, aged.RegisterType("bg", JobTypeConfig{Priority: PriorityBackground}))
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"New: Capacity 0", func() error { _, err := New(Config{}); return err }, ErrInvalidConfig},
		{"New: Capacity -1", func() error { _, err := New(Config{Capacity: -1}); return err }, ErrInvalidConfig},
		{"New: CostAlpha NaN", func() error { _, err := New(Config{Capacity: 1, CostAlpha: math.NaN()}); return err }, ErrInvalidConfig},
		{"New: CostAlpha 2", func() error { _, err := New(Config{Capacity: 1, CostAlpha: 2}); return err }, ErrInvalidConfig},
		{"New: Weight NaN", func() error {
			_, err := New(Config{Capacity: 1, DefaultKey: KeyPolicy{Weight: math.NaN()}})
			return err
		}, ErrInvalidConfig},
		{"New: Weight +Inf", func() error {
			_, err := New(Config{Capacity: 1, Keys: map[string]KeyPolicy{"k": {Weight: math.Inf(1)}}})
			return err
		}, ErrInvalidConfig},
		{"New: MinSeats over capacity", func() error { _, err := New(Config{Capacity: 1, DefaultKey: KeyPolicy{MinSeats: 2}}); return err }, ErrInvalidConfig},
		{"New: MaxQueue -1", func() error { _, err := New(Config{Capacity: 1, MaxQueue: -1}); return err }, ErrInvalidConfig},
		{"New: MaxKeys -1", func() error { _, err := New(Config{Capacity: 1, MaxKeys: -1}); return err }, ErrInvalidConfig},
		{"New: KeyTTL -1", func() error { _, err := New(Config{Capacity: 1, KeyTTL: -1}); return err }, ErrInvalidConfig},
		{"New: TierLimits 0", func() error { _, err := New(Config{Capacity: 1, TierLimits: map[Priority]int{1: 0}}); return err }, ErrInvalidConfig},
		{"New: Aging.Interval 0", func() error { _, err := New(Config{Capacity: 1, Aging: &AgingConfig{}}); return err }, ErrInvalidConfig},
		{"New: Aging.Step -1", func() error {
			_, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Step: -1}})
			return err
		}, ErrInvalidConfig},
		{"New: Aging.Grace -1", func() error {
			_, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Grace: -1}})
			return err
		}, ErrInvalidConfig},
		{"New: Aging.Max -1", func() error {
			_, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Max: -1}})
			return err
		}, ErrInvalidConfig},
		{"New: Aging.Urgent -1", func() error {
			_, err := New(Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Urgent: -1}})
			return err
		}, ErrInvalidConfig},
		{"New: Keys' MinSeats sum over capacity", func() error {
			_, err := New(Config{Capacity: 2, Keys: map[string]KeyPolicy{"a": {MinSeats: 2}, "b": {MinSeats: 1}}})
			return err
		}, ErrInvalidConfig},
		{"New: Pressure without Source", func() error { _, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Threshold: 1}}); return err }, ErrInvalidConfig},
		{"New: Pressure.Threshold NaN", func() error {
			_, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Source: PressureFunc(func() float64 { return 0 }), Threshold: math.NaN()}})
			return err
		}, ErrInvalidConfig},
		{"New: Pressure.Interval -1", func() error {
			_, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Source: PressureFunc(func() float64 { return 0 }), Threshold: 1, Interval: -1}})
			return err
		}, ErrInvalidConfig},
		{"New: WithCostStore every -1", func() error {
			_, err := New(Config{Capacity: 1}, WithCostStore(FileCostStore(t.TempDir()+"/costs"), -1))
			return err
		}, ErrInvalidConfig},
		{"New: Adaptive.Min -1", func() error { _, err := New(Config{Adaptive: &AdaptiveConfig{Min: -1, Max: 4}}); return err }, ErrInvalidConfig},
		{"New: Adaptive.Max below Min", func() error { _, err := New(Config{Adaptive: &AdaptiveConfig{Min: 4, Max: 2}}); return err }, ErrInvalidConfig},
		{"New: Adaptive.Smoothing NaN", func() error {
			_, err := New(Config{Adaptive: &AdaptiveConfig{Min: 1, Max: 4, Smoothing: math.NaN()}})
			return err
		}, ErrInvalidConfig},
		{"SetAdaptiveBounds on a fixed capacity", func() error { return s.SetAdaptiveBounds(1, 2) }, ErrInvalidConfig},
		{"RegisterType: empty name", func() error { return s.RegisterType("", JobTypeConfig{Priority: 1}) }, ErrInvalidConfig},
		{"RegisterType: Priority 0", func() error { return s.RegisterType("p0", JobTypeConfig{}) }, ErrInvalidConfig},
		{"RegisterType: Priority -5", func() error { return s.RegisterType("pn", JobTypeConfig{Priority: -5}) }, ErrInvalidConfig},
		{"RegisterType: DefaultCost -1", func() error { return s.RegisterType("c", JobTypeConfig{Priority: 1, DefaultCost: -1}) }, ErrInvalidConfig},
		{"RegisterType: MaxWait -1", func() error { return s.RegisterType("w", JobTypeConfig{Priority: 1, MaxWait: -1}) }, ErrInvalidConfig},
		{"RegisterType: OrderAging NaN", func() error {
			return s.RegisterType("o", JobTypeConfig{Priority: 1, Order: ShortestFirst, OrderAging: math.NaN()})
		}, ErrInvalidConfig},
		{"RegisterType: Access 7", func() error { return s.RegisterType("a", JobTypeConfig{Priority: 1, Access: 7}) }, ErrInvalidConfig},
		{"RegisterType: Retry.MaxAttempts -1", func() error {
			return s.RegisterType("r", JobTypeConfig{Priority: 1, Retry: RetryPolicy{MaxAttempts: -1}})
		}, ErrInvalidConfig},
		{"RegisterType: again, other config", func() error { return s.RegisterType("fg", JobTypeConfig{Priority: 1}) }, ErrInvalidConfig},
		{"Acquire: nil ctx", func() error { _, err := s.Acquire(nilCtx, Request{Type: "fg"}); return err }, ErrInvalidConfig},
		{"Acquire: cancelled ctx", func() error { _, err := s.Acquire(cancelled, Request{Type: "fg"}); return err }, context.Canceled},
		{"Acquire: unknown type", func() error { _, err := s.Acquire(context.Background(), Request{Type: "nope"}); return err }, ErrUnknownJobType},
		{"Acquire: zero Request", func() error { _, err := s.Acquire(context.Background(), Request{}); return err }, ErrUnknownJobType},
		{"Acquire: huge type name", func() error { _, err := s.Acquire(context.Background(), Request{Type: JobType(huge)}); return err }, ErrUnknownJobType},
		{"RunSync: nil fn", func() error { return s.RunSync(context.Background(), "fg", "", "", nil) }, ErrInvalidConfig},
		{"RunSync: nil ctx", func() error { return s.RunSync(nilCtx, "fg", "", "", fn) }, ErrInvalidConfig},
		{"RunSync: unknown type", func() error { return s.RunSync(context.Background(), "nope", "", "", fn) }, ErrUnknownJobType},
		{"Submit: nil fn", func() error { return s.Submit("bg", "", nil) }, ErrInvalidConfig},
		{"Submit: unknown type", func() error { return s.Submit("nope", "", fn) }, ErrUnknownJobType},
		{"SubmitWith: nil ctx", func() error { return s.SubmitWith(nilCtx, "bg", "", fn) }, ErrInvalidConfig},
		{"SubmitWith: WithTTL(-1)", func() error { return s.SubmitWith(context.Background(), "bg", "", fn, WithTTL(-1)) }, ErrInvalidConfig},
		{"SubmitWith: WithPriority across tiers", func() error {
			return s.SubmitWith(context.Background(), "bg", "", fn, WithPriority(PriorityForeground))
		}, ErrInvalidConfig},
		{"SubmitWith: WithPriority at Aging.Urgent", func() error {
			return aged.SubmitWith(context.Background(), "bg", "", fn, WithPriority(30))
		}, ErrInvalidConfig},
		{"SetCapacity(0)", func() error { return s.SetCapacity(0) }, ErrInvalidConfig},
		{"SetCapacity(-1)", func() error { return s.SetCapacity(-1) }, ErrInvalidConfig},
		{"SetCapacity below MinSeats", func() error { return s.SetCapacity(math.MinInt) }, ErrInvalidConfig},
		{"SetTypeLimit(-1)", func() error { return s.SetTypeLimit("fg", -1) }, ErrInvalidConfig},
		{"SetTypeLimit: unknown type", func() error { return s.SetTypeLimit("nope", 1) }, ErrUnknownJobType},
		{"SetWeight(NaN)", func() error { return s.SetWeight("k", math.NaN()) }, ErrInvalidConfig},
		{"SetWeight(+Inf)", func() error { return s.SetWeight("k", math.Inf(1)) }, ErrInvalidConfig},
		{"SetWeight(0)", func() error { return s.SetWeight("k", 0) }, ErrInvalidConfig},
		{"SetWeight(-1)", func() error { return s.SetWeight("k", -1) }, ErrInvalidConfig},
		{"SetKeyPolicy: Weight NaN", func() error { return s.SetKeyPolicy("k", KeyPolicy{Weight: math.NaN()}) }, ErrInvalidConfig},
		{"SetKeyPolicy: MaxInFlight -1", func() error { return s.SetKeyPolicy("k", KeyPolicy{MaxInFlight: -1}) }, ErrInvalidConfig},
		{"SetKeyPolicy: MinSeats over capacity", func() error { return s.SetKeyPolicy("k", KeyPolicy{MinSeats: 2}) }, ErrInvalidConfig},
		{"Pause(-1)", func() error { return s.Pause("fg", -time.Second) }, ErrInvalidConfig},
		{"Pause: unknown type", func() error { return s.Pause("nope", 0) }, ErrUnknownJobType},
		{"Resume: unknown type", func() error { return s.Resume("nope") }, ErrUnknownJobType},
		{"PauseKey(-1)", func() error { return s.PauseKey("k", -1) }, ErrInvalidConfig},
		{"NewRuntimePressure(0)", func() error { _, err := NewRuntimePressure(0); return err }, ErrInvalidConfig},
		{"NewRuntimePressure(-1)", func() error { _, err := NewRuntimePressure(-1); return err }, ErrInvalidConfig},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// None of that changed anything.
	if snap := s.Snapshot(); snap.Capacity != 2 || snap.InUse != 0 || snap.Queued != 0 || len(snap.Types) != 2 || snap.Counters.Submitted != 0 {
		t.Errorf("after bad input: %+v", snap)
	}
	checkInvariants(t, s)

	// Values that are not errors: documented defaults.
	if got := s.StarvationBound("nope"); got != NoStarvationBound {
		t.Errorf("StarvationBound(unknown) = %v", got)
	}
	if Retryable(nil) != nil || IsRetryable(nil) {
		t.Error("Retryable(nil) is not nil")
	}
	s.ResumeKey("never paused") // a no-op
	if _, err := New(Config{Capacity: 1}, nil, WithLogger(nil), WithTracerProvider(nil), WithMeterProvider(nil), WithEventHandler(nil), WithCostStore(nil, 0)); err != nil {
		t.Errorf("nil options: %v", err)
	}
	if err := FileCostStore("").Save(context.Background(), nil); err == nil {
		t.Error("FileCostStore(\"\").Save succeeded")
	}
	p, err := s.Acquire(context.Background(), Request{Type: "fg", JobID: huge, FairnessKey: huge})
	must(t, err) // oversized identifiers are folded (MaxIdentifierLen)
	p.Release()
	ran := make(chan struct{})
	must(t, s.SubmitWith(context.Background(), "bg", huge, func(context.Context) error { close(ran); return nil }, nil, WithTTL(0))) // nil options ignored; TTL 0: the type's MaxWait
	<-ran

	// A NaN pressure reading is no pressure: work below MinPriority runs.
	ps, err := New(Config{Capacity: 1, Pressure: &PressureConfig{Source: PressureFunc(math.NaN), Threshold: 0.5, MinPriority: 100}})
	must(t, err)
	must(t, ps.RegisterType("low", JobTypeConfig{Priority: 1}))
	lp, err := ps.Acquire(cancelledLater(t), Request{Type: "low"})
	must(t, err)
	lp.Release()
	must(t, ps.Close(context.Background()))

	// Documented panics: programming errors.
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"Permit.Release twice", func() { p.Release() }, "not held"},
		{"DebugHandler(nil)", func() { DebugHandler(nil) }, "nil *Scheduler"},
		{"zero Permit", func() { new(Permit).Release() }, "nil pointer"},
		{"nil Scheduler", func() { (*Scheduler)(nil).Snapshot() }, "nil pointer"},
		{"RunSync: fn panics", func() {
			_ = s.RunSync(context.Background(), "fg", "", "", func(context.Context) error { panic("fn's panic") })
		}, "fn's panic"},
	} {
		if got := panicOf(tc.call); !strings.Contains(got, tc.want) {
			t.Errorf("%s: panic %q, want one saying %q", tc.name, got, tc.want)
		}
	}
	// The panicking fn gave its seat back: both seats can be held again.
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	for _, id := range []string{"x", "y"} {
		p, err := s.Acquire(ctx, Request{Type: "fg", JobID: id})
		if err != nil {
			t.Fatalf("after a panicking RunSync: %v", err)
		}
		defer p.Release()
	}
	DebugHandler(s).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?format=%zz&"+huge[:4096]+"=1", nil))
	must(t, s.Close(nilCtx)) // nil: as context.Background()
	if err := s.Close(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// cancelledLater is a context that ends with the test (an Acquire that
// should not wait fails with its error rather than hanging).
func cancelledLater(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// panicOf returns what f panicked with, formatted, or "".
func panicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(v), "\n", " "), "\t", " "))
		}
	}()
	f()
	return ""
}

func fmtAny(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-string panic"
}
