package critpolicy

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/oteltest"
)

// FuzzContext resolves arbitrary values of the criticality field (raw split
// at newlines: one value or several) from trusted and untrusted callers,
// with and without a level already in the context: nothing panics; a
// level already there wins and the predicate is not asked; otherwise the
// predicate is asked once, an untrusted caller never gets a level, a
// trusted one gets the level exactly when it stated one value that
// Parse accepts, and every request that gets none is counted once, under
// the right reason.
func FuzzContext(f *testing.F) {
	f.Add("sheddable", true, false)
	f.Add("critical_plus", false, false)
	f.Add("sheddable\nsheddable", true, false)
	f.Add("SHEDDABLE_PLUS", true, true)
	f.Add("\xff\x00 critical", true, false)
	f.Add("", true, false)
	rec := oteltest.New()
	p, err := New(rec.MeterProvider, "fuzz", nil)
	if err != nil {
		f.Fatal(err)
	}
	reason := attribute.Key("fairseat.criticality.reason")
	counts := func(t *testing.T) (untrusted, invalid float64) {
		m, err := rec.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		untrusted, _ = m.Value(IgnoredMetric, reason.String(ReasonUntrusted))
		invalid, _ = m.Value(IgnoredMetric, reason.String(ReasonInvalid))
		return untrusted, invalid
	}
	f.Fuzz(func(t *testing.T, raw string, trusted, preset bool) {
		values := strings.Split(raw, "\n")
		ctx := context.Background()
		if preset {
			ctx = criticality.NewContext(ctx, criticality.SheddablePlus)
		}
		u0, i0 := counts(t)
		asked := 0
		got, l := p.Context(ctx, values, func() bool { asked++; return trusted })
		u1, i1 := counts(t)
		from, carried := criticality.FromContext(got)
		parsed, err := criticality.Parse(values[0])
		switch {
		case preset:
			if got != ctx || l != criticality.SheddablePlus || asked != 0 || u1 != u0 || i1 != i0 {
				t.Fatalf("a level in the context: %v, asked %d, counted %v untrusted %v invalid; want it, not asked, not counted", l, asked, u1-u0, i1-i0)
			}
		case asked != 1:
			t.Fatalf("the predicate was asked %d times", asked)
		case !trusted:
			if got != ctx || l != criticality.Critical || u1 != u0+1 || i1 != i0 {
				t.Fatalf("untrusted %q: %v, counted %v untrusted %v invalid", values, l, u1-u0, i1-i0)
			}
		case len(values) == 1 && err == nil:
			if l != parsed || from != parsed || !carried || u1 != u0 || i1 != i0 {
				t.Fatalf("trusted %q: %v, context %v %v, counted %v untrusted %v invalid; want %v in both, not counted", values, l, from, carried, u1-u0, i1-i0, parsed)
			}
		default:
			if got != ctx || l != criticality.Critical || u1 != u0 || i1 != i0+1 {
				t.Fatalf("trusted, invalid %q: %v, counted %v untrusted %v invalid", values, l, u1-u0, i1-i0)
			}
		}
		if off := p.Offset(l); off != DefaultOffsets[l] {
			t.Fatalf("Offset(%v) = %d, want %d", l, off, DefaultOffsets[l])
		}
	})
}
