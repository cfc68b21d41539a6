package critpolicy

import (
	"context"
	"testing"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
)

func TestResolve(t *testing.T) {
	p, err := New(nil, "test", nil)
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
