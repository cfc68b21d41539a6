package admission

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestConfigErrors checks that every invalid Config is refused with an error
// that wraps ErrInvalidConfig and names the bad field.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"zero capacity", Config{}, "Capacity"},
		{"negative capacity", Config{Capacity: -1}, "Capacity"},
		{"tier limit zero", Config{Capacity: 1, TierLimits: map[Priority]int{5: 0}}, "TierLimits[5]"},
		{"aging interval", Config{Capacity: 1, Aging: &AgingConfig{}}, "Aging.Interval"},
		{"aging grace", Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Grace: -1}}, "Aging.Grace"},
		{"aging step", Config{Capacity: 1, Aging: &AgingConfig{Interval: 1, Step: -1}}, "Aging.Step"},
		{"NaN weight", Config{Capacity: 1, Keys: map[string]KeyPolicy{"a": {Weight: math.NaN()}}}, `Keys["a"].Weight`},
		{"negative weight", Config{Capacity: 1, DefaultKey: KeyPolicy{Weight: -2}}, "DefaultKey.Weight"},
		{"infinite weight", Config{Capacity: 1, Keys: map[string]KeyPolicy{"a": {Weight: math.Inf(1)}}}, `Keys["a"].Weight`},
		{"min seats sum", Config{Capacity: 3, Keys: map[string]KeyPolicy{"a": {MinSeats: 2}, "b": {MinSeats: 2}}}, "MinSeats sum to 4"},
		{"min seats above capacity", Config{Capacity: 3, DefaultKey: KeyPolicy{MinSeats: 4}}, "DefaultKey.MinSeats"},
		{"negative in flight", Config{Capacity: 3, DefaultKey: KeyPolicy{MaxInFlight: -1}}, "DefaultKey.MaxInFlight"},
		{"negative max queue", Config{Capacity: 3, MaxQueue: -1}, "MaxQueue"},
		{"alpha NaN", Config{Capacity: 3, CostAlpha: math.NaN()}, "CostAlpha"},
		{"alpha above 1", Config{Capacity: 3, CostAlpha: 1.5}, "CostAlpha"},
		{"negative TTL", Config{Capacity: 3, KeyTTL: -time.Second}, "KeyTTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New(%+v) = %v, want ErrInvalidConfig naming %q", tc.cfg, err, tc.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	s, err := New(Config{Capacity: 2, Aging: &AgingConfig{Interval: time.Second}})
	must(t, err)
	c := s.cfg
	if c.MaxQueue != DefaultMaxQueue || c.CostAlpha != DefaultCostAlpha || c.MaxKeys != DefaultMaxKeys ||
		c.KeyTTL != DefaultKeyTTL || c.MaxCostEntries != DefaultMaxCostEntries || c.CostTTL != DefaultCostTTL || c.Aging.Step != 1 {
		t.Fatalf("defaults not applied: %+v (aging %+v)", c, *c.Aging)
	}
	must(t, s.RegisterType("x", JobTypeConfig{Priority: 1}))
	if got := s.types["x"].cfg.DefaultCost; got != DefaultJobCost {
		t.Fatalf("DefaultCost = %v, want %v", got, DefaultJobCost)
	}
}

// TestRegisterTypeErrors checks job type validation, including the rule that
// a priority must admit something and stay below Aging.Urgent.
func TestRegisterTypeErrors(t *testing.T) {
	s, err := New(Config{Capacity: 4, TierLimits: map[Priority]int{0: 2}, Aging: &AgingConfig{Interval: time.Second, Urgent: 50}})
	must(t, err)
	must(t, s.RegisterType("fg", JobTypeConfig{Priority: PriorityForeground}))
	must(t, s.RegisterType("fg", JobTypeConfig{Priority: PriorityForeground})) // identical: no-op
	must(t, s.RegisterType("zero-with-limit", JobTypeConfig{Priority: 0}))     // TierLimits[0] admits 2
	for _, tc := range []struct {
		name  JobType
		cfg   JobTypeConfig
		field string
	}{
		{"fg", JobTypeConfig{Priority: PriorityBackground}, "already registered"},
		{"neg", JobTypeConfig{Priority: -3}, "Priority -3 admits no job"},
		{"", JobTypeConfig{Priority: 1}, "must not be empty"},
		{"urgent", JobTypeConfig{Priority: 50}, "below Aging.Urgent"},
		{"cost", JobTypeConfig{Priority: 1, DefaultCost: -1}, "DefaultCost"},
		{"cap", JobTypeConfig{Priority: 1, MaxConcurrency: -1}, "MaxConcurrency"},
		{"wait", JobTypeConfig{Priority: 1, MaxWait: -1}, "MaxWait"},
	} {
		err := s.RegisterType(tc.name, tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("RegisterType(%q, %+v) = %v, want ErrInvalidConfig mentioning %q", tc.name, tc.cfg, err, tc.field)
		}
	}
}

func TestStarvationBound(t *testing.T) {
	s, err := New(Config{Capacity: 4, Aging: &AgingConfig{Grace: 30 * time.Second, Interval: 10 * time.Second, Step: 4, Urgent: 41}})
	must(t, err)
	must(t, s.RegisterType("bg", JobTypeConfig{Priority: 10}))
	// n = ceil((41-10)/4) = 8 promotions: 30s + 8·10s.
	if got, want := s.StarvationBound("bg"), 110*time.Second; got != want {
		t.Errorf("StarvationBound(bg) = %v, want %v", got, want)
	}
	if got := s.StarvationBound("nope"); got != NoStarvationBound {
		t.Errorf("StarvationBound(unknown) = %v, want NoStarvationBound", got)
	}
	s2, err := New(Config{Capacity: 1})
	must(t, err)
	must(t, s2.RegisterType("bg", JobTypeConfig{Priority: 10}))
	if got := s2.StarvationBound("bg"); got != NoStarvationBound {
		t.Errorf("StarvationBound without aging = %v, want NoStarvationBound", got)
	}
}

// TestRankAt pins the aging formulas of DESIGN §4 at their boundaries.
func TestRankAt(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	a := &AgingConfig{Grace: 10 * time.Second, Interval: 5 * time.Second, Step: 2, Max: 16, Urgent: 20}
	for _, tc := range []struct {
		wait time.Duration
		want rank
	}{
		{0, rank{eff: 10, next: t0 + int64(15*time.Second)}},
		{10 * time.Second, rank{eff: 10, next: t0 + int64(15*time.Second)}}, // grace over, no promotion yet
		{15 * time.Second, rank{eff: 12, promoted: 1, next: t0 + int64(20*time.Second)}},
		{24 * time.Second, rank{eff: 14, promoted: 2, next: t0 + int64(25*time.Second)}},
		// aged 16 reaches Max: the next change is urgency at ceil((20-10)/2)=5 promotions.
		{25 * time.Second, rank{eff: 16, promoted: 3, next: t0 + int64(35*time.Second)}},
		{34 * time.Second, rank{eff: 16, promoted: 4, next: t0 + int64(35*time.Second)}},
		{35 * time.Second, rank{eff: 16, promoted: 5, urgent: true}},
	} {
		if got := rankAt(a, 10, t0, t0+int64(tc.wait)); got != tc.want {
			t.Errorf("wait %v: rank = %+v, want %+v", tc.wait, got, tc.want)
		}
	}
	if got := rankAt(nil, 7, t0, t0+int64(time.Hour)); got != (rank{eff: 7}) {
		t.Errorf("no aging: %+v", got)
	}
}

// TestAgingMaxNeverDemotes: Max caps promotions but leaves a type whose base
// is above it where it is (see the package doc on DESIGN's min(aged, Max)).
func TestAgingMaxNeverDemotes(t *testing.T) {
	t0 := time.Unix(0, 0).UnixNano()
	a := &AgingConfig{Interval: time.Second, Step: 1, Max: 30}
	if r := rankAt(a, 40, t0, t0+int64(time.Hour)); r.eff != 40 {
		t.Errorf("foreground base 40 with Max 30: effective %d, want 40", r.eff)
	}
	if r := rankAt(a, 10, t0, t0+int64(time.Hour)); r.eff != 30 {
		t.Errorf("background aged for an hour: effective %d, want the ceiling 30", r.eff)
	}
}
