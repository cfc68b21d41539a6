package criticality_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/hostiletest"
)

// Bad input to every exported function: a documented default, a clear
// error, or the documented panic (see "Errors and panics" in the package
// doc).
func TestBadInput(t *testing.T) {
	for _, in := range []string{"", " ", "\x00", "\xff\xfe", "critical\x00", "critical_plus\r\n", "ＣＲＩＴＩＣＡＬ", "critical_plu", "critical_pluss", strings.Repeat("critical", 1<<17)} {
		l, err := criticality.Parse(in)
		if l != criticality.Critical || !errors.Is(err, criticality.ErrInvalid) || len(err.Error()) > 80 {
			t.Errorf("Parse(%.40q) = %v, %v; want critical and a short error wrapping ErrInvalid", in, l, err)
		}
	}
	for _, l := range []criticality.Level{-128, -3, 2, 127} {
		if s := l.String(); s == "" || !strings.HasPrefix(s, "Level(") {
			t.Errorf("Level(%d).String() = %q, want Level(n)", int8(l), s)
		}
		ctx := context.Background()
		if got := criticality.NewContext(ctx, l); got != ctx {
			t.Errorf("NewContext(ctx, %v) stored an invalid level", l)
		}
	}
	//lint:ignore SA1012 the nil is the test
	if l, ok := criticality.FromContext(nil); ok || l != criticality.Critical {
		t.Errorf("FromContext(nil) = %v, %v; want critical, false", l, ok)
	}
	//lint:ignore SA1012 the nil is the test
	if got := hostiletest.PanicOf(func() { criticality.NewContext(nil, criticality.Sheddable) }); !strings.Contains(got, "NewContext: nil context") {
		t.Errorf("NewContext(nil): panic %q, want one naming the nil context", got)
	}
	//lint:ignore SA1012 the nil is the test
	if got := hostiletest.PanicOf(func() { criticality.NewContext(nil, criticality.Level(9)) }); !strings.Contains(got, "NewContext: nil context") {
		t.Errorf("NewContext(nil, invalid): panic %q, want one naming the nil context", got)
	}
}
