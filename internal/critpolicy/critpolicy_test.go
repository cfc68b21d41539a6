package critpolicy

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/oteltest"
)

func TestResolve(t *testing.T) {
	rec := oteltest.New()
	p, err := New(rec.MeterProvider, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		values  []string
		trusted bool
		want    criticality.Level
		ok      bool
	}{
		{[]string{"sheddable"}, true, criticality.Sheddable, true},
		{[]string{"critical_plus"}, true, criticality.CriticalPlus, true},
		{[]string{"critical_plus"}, false, criticality.Critical, false},
		{[]string{"sheddable", "sheddable"}, true, criticality.Critical, false},
		{[]string{"nope"}, true, criticality.Critical, false},
	} {
		if l, ok := p.Resolve(ctx, tc.values, tc.trusted); l != tc.want || ok != tc.ok {
			t.Errorf("Resolve(%q, trusted %v) = %v, %v; want %v, %v", tc.values, tc.trusted, l, ok, tc.want, tc.ok)
		}
	}
	m, err := rec.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reason := attribute.Key("fairseat.criticality.reason")
	untrusted, _ := m.Value(IgnoredMetric, reason.String(ReasonUntrusted))
	invalid, _ := m.Value(IgnoredMetric, reason.String(ReasonInvalid))
	if untrusted != 1 || invalid != 2 {
		t.Errorf("ignored: %v untrusted, %v invalid; want 1 and 2\n%s", untrusted, invalid, m)
	}
}

// A level already in the context wins, and the trust predicate is not
// even asked; otherwise it is asked once.
func TestContext(t *testing.T) {
	p, err := New(nil, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	trusted := func() bool { asked++; return true }
	ctx := criticality.NewContext(context.Background(), criticality.CriticalPlus)
	if got, l := p.Context(ctx, []string{"sheddable"}, trusted); got != ctx || l != criticality.CriticalPlus || asked != 0 {
		t.Errorf("with a level in the context: %v, asked %d times; want critical_plus, not asked", l, asked)
	}
	got, l := p.Context(context.Background(), []string{"sheddable"}, trusted)
	if from, _ := criticality.FromContext(got); l != criticality.Sheddable || from != criticality.Sheddable || asked != 1 {
		t.Errorf("stated sheddable: %v (context %v), asked %d times; want sheddable, asked once", l, from, asked)
	}
}

func TestOffsets(t *testing.T) {
	p, err := New(nil, "test", map[criticality.Level]admission.Priority{criticality.SheddablePlus: -4})
	if err != nil {
		t.Fatal(err)
	}
	want := map[criticality.Level]admission.Priority{-2: -2, -1: -4, 0: 0, 1: 1, 5: 0}
	for l, off := range want {
		if got := p.Offset(l); got != off {
			t.Errorf("Offset(%v) = %d, want %d", l, got, off)
		}
	}
	if _, err := New(nil, "test", map[criticality.Level]admission.Priority{2: 1}); err == nil {
		t.Error("New accepted an offset for Level(2)")
	}
}
