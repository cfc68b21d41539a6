package criticality_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/criticality"
)

func TestParseAndString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want criticality.Level
	}{
		{"sheddable", criticality.Sheddable},
		{"sheddable_plus", criticality.SheddablePlus},
		{"critical", criticality.Critical},
		{"critical_plus", criticality.CriticalPlus},
		{"CRITICAL_PLUS", criticality.CriticalPlus},
		{"Sheddable", criticality.Sheddable},
	} {
		got, err := criticality.Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if s := got.String(); !strings.EqualFold(s, tc.in) {
			t.Errorf("%v.String() = %q, want %q", got, s, strings.ToLower(tc.in))
		}
	}
}

func TestParseInvalid(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	// "ſ" (U+017F, long s) folds to "s" under Unicode case folding: a
	// name spelled with it is not a level in any ASCII case.
	for _, in := range []string{"", " critical", "critical ", "crit", "critical-plus", "1", "critical_plus\x00", "ﬀ", long,
		"ſheddable", "critical_pluſ", "ſheddable_pluſ", "SHEDDABLE_PLUſ"} {
		got, err := criticality.Parse(in)
		if !errors.Is(err, criticality.ErrInvalid) || got != criticality.Critical {
			t.Errorf("Parse(%.40q) = %v, %v; want Critical and ErrInvalid", in, got, err)
		}
		if err != nil && len(err.Error()) > 80 {
			t.Errorf("Parse(%.40q): error of %d bytes quotes too much of the input", in, len(err.Error()))
		}
	}
}

func TestValid(t *testing.T) {
	for l := criticality.Level(-128); ; l++ {
		want := l >= -2 && l <= 1
		if l.Valid() != want {
			t.Errorf("Level(%d).Valid() = %v, want %v", l, l.Valid(), want)
		}
		if !want && l.String() == "critical" {
			t.Errorf("Level(%d).String() names a level", l)
		}
		if l == 127 {
			break
		}
	}
	var zero criticality.Level
	if zero != criticality.Critical {
		t.Errorf("the zero Level is %v, want critical", zero)
	}
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	if l, ok := criticality.FromContext(ctx); ok || l != criticality.Critical {
		t.Errorf("FromContext(empty) = %v, %v; want critical, false", l, ok)
	}
	ctx = criticality.NewContext(ctx, criticality.Sheddable)
	if l, ok := criticality.FromContext(ctx); !ok || l != criticality.Sheddable {
		t.Errorf("FromContext = %v, %v; want sheddable, true", l, ok)
	}
	if got := criticality.NewContext(ctx, criticality.Level(9)); got != ctx {
		t.Error("NewContext stored an invalid level")
	}
	inner := criticality.NewContext(ctx, criticality.CriticalPlus)
	if l, _ := criticality.FromContext(inner); l != criticality.CriticalPlus {
		t.Errorf("the inner level is %v, want critical_plus", l)
	}
}
