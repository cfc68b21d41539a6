// Package critpolicy is what both server adapters do with the criticality
// a request states (package criticality): believe it only from trusted
// callers, ignore and count what is untrusted or not a level, and map the
// level to the request's priority offset within its route's type.
package critpolicy

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
)

// IgnoredMetric counts stated levels that were ignored, by
// fairseat.criticality.reason: untrusted (the caller may not state one) or
// invalid (not a level, or stated more than once).
const IgnoredMetric = "fairseat.criticality.ignored"

// Reasons a stated level is ignored.
const (
	ReasonUntrusted = "untrusted"
	ReasonInvalid   = "invalid"
)

// DefaultOffsets are the priority offsets of the levels, from Sheddable up:
// sheddable two below the route's type, sheddable_plus one below,
// critical_plus one above.
var DefaultOffsets = map[criticality.Level]admission.Priority{
	criticality.Sheddable:     -2,
	criticality.SheddablePlus: -1,
	criticality.Critical:      0,
	criticality.CriticalPlus:  1,
}

// A Policy resolves stated levels. It is built once by an adapter and only
// read afterwards, so it is safe for concurrent use. The zero value is not
// usable; see New.
type Policy struct {
	offsets   [4]admission.Priority // by level - Sheddable
	ignored   metric.Int64Counter
	untrusted []metric.AddOption
	invalid   []metric.AddOption
}

// New returns a policy with the given offsets (levels missing from the map
// keep DefaultOffsets'; keys that are not levels are an error naming them)
// counting ignored levels with an instrument of mp's meter for scope.
func New(mp metric.MeterProvider, scope string, offsets map[criticality.Level]admission.Priority) (*Policy, error) {
	p := &Policy{}
	for l, off := range DefaultOffsets {
		p.offsets[l-criticality.Sheddable] = off
	}
	for l, off := range offsets {
		if !l.Valid() {
			return nil, fmt.Errorf("criticality offsets: %v is not a level", l)
		}
		p.offsets[l-criticality.Sheddable] = off
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	c, err := mp.Meter(scope).Int64Counter(IgnoredMetric,
		metric.WithUnit("{request}"),
		metric.WithDescription("Criticality levels stated by requests and ignored: the caller is not trusted to state one, or the value is not a level."))
	if err != nil || c == nil {
		if err != nil {
			otel.Handle(err)
		}
		c = noop.Int64Counter{}
	}
	p.ignored = c
	key := attribute.Key("fairseat.criticality.reason")
	p.untrusted = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(key.String(ReasonUntrusted)))}
	p.invalid = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(key.String(ReasonInvalid)))}
	return p, nil
}

// Context returns ctx carrying the level that values (the request's
// values of the criticality field, at least one) state, and that level,
// when trusted says the caller may state one and values name exactly one
// level; otherwise ctx and Critical, having counted an ignored level. A
// level already in ctx (put there by an earlier interceptor or middleware)
// wins: it is returned, and values are not looked at. trusted is called at
// most once.
func (p *Policy) Context(ctx context.Context, values []string, trusted func() bool) (context.Context, criticality.Level) {
	if l, ok := criticality.FromContext(ctx); ok {
		return ctx, l
	}
	l, ok := p.Resolve(ctx, values, trusted())
	if !ok {
		return ctx, criticality.Critical
	}
	return criticality.NewContext(ctx, l), l
}

// Resolve returns the level that values (the request's values of the
// criticality field, at least one) state, and true, when the caller is
// trusted and they name exactly one level. Otherwise it counts the request
// as ignored and returns Critical and false.
func (p *Policy) Resolve(ctx context.Context, values []string, trusted bool) (criticality.Level, bool) {
	if !trusted {
		p.ignored.Add(ctx, 1, p.untrusted...)
		return criticality.Critical, false
	}
	if len(values) == 1 {
		if l, err := criticality.Parse(values[0]); err == nil {
			return l, true
		}
	}
	// Not a level, or several values (which hop stated which?).
	p.ignored.Add(ctx, 1, p.invalid...)
	return criticality.Critical, false
}

// Offset is the priority offset of level l (0 for a value that is not a
// level).
func (p *Policy) Offset(l criticality.Level) admission.Priority {
	if !l.Valid() {
		return 0
	}
	return p.offsets[l-criticality.Sheddable]
}
