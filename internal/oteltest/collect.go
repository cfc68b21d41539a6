package oteltest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metrics is what one Collect saw: every instrument with at least one
// point, by name. The zero value is empty. Each Collect returns a new one,
// shared with nobody: reading it from many goroutines is safe.
type Metrics map[string]Metric

// Metric is one instrument's data in a collection. Its zero value is an
// empty metric, of no kind.
type Metric struct {
	Scope       Scope
	Name        string
	Unit        string
	Description string
	Kind        Kind
	Number      Number
	Points      []Point // one per attribute set, ordered by their encoding
}

// Point is one attribute set's aggregate. Counters and up-down counters
// (synchronous or observable) fill Value with their sum, gauges with their
// last value; histograms fill the other fields and leave Value 0. The
// zero value is an empty point with no attributes.
type Point struct {
	Attributes attribute.Set
	Value      float64

	Count        uint64    // values recorded
	Sum          float64   // their sum
	Min, Max     float64   // their extremes
	Bounds       []float64 // the bucket boundaries
	BucketCounts []uint64  // len(Bounds)+1 buckets: (-∞, b0], (b0, b1], ..., (bn, +∞)
}

// Point returns the point of metric name with exactly the attributes kvs
// (none: the empty set), and whether there is one.
func (m Metrics) Point(name string, kvs ...attribute.KeyValue) (Point, bool) {
	return m[name].Point(kvs...)
}

// Value returns the Value of metric name's point with exactly the
// attributes kvs, and whether there is one.
func (m Metrics) Value(name string, kvs ...attribute.KeyValue) (float64, bool) {
	p, ok := m.Point(name, kvs...)
	return p.Value, ok
}

// Point returns the point with exactly the attributes kvs, and whether
// there is one.
func (m Metric) Point(kvs ...attribute.KeyValue) (Point, bool) {
	want := attribute.NewSet(kvs...)
	for _, p := range m.Points {
		if p.Attributes.Equals(&want) {
			return p, true
		}
	}
	return Point{}, false
}

// String lists every metric (by name) and its points, one per line, in a
// stable order: for test failures, and examples with checked output.
func (m Metrics) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m)) {
		mt := m[name]
		fmt.Fprintf(&b, "%s (%s %s, scope %s, unit %q)", name, mt.Number, mt.Kind, mt.Scope.Name, mt.Unit)
		if mt.Description != "" {
			fmt.Fprintf(&b, ": %s", mt.Description)
		}
		b.WriteByte('\n')
		for _, p := range mt.Points {
			fmt.Fprintf(&b, "\t{%s}", p.Attributes.Encoded(attribute.DefaultEncoder()))
			if mt.Kind == Histogram {
				fmt.Fprintf(&b, " count=%d sum=%g min=%g max=%g buckets=%v\n", p.Count, p.Sum, p.Min, p.Max, p.BucketCounts)
			} else {
				fmt.Fprintf(&b, " %g\n", p.Value)
			}
		}
	}
	return b.String()
}

// registration is a callback and the instruments it may observe. It never
// changes after register; it is in its provider's regs until Unregister.
type registration struct {
	noop.Registration
	mp          *MeterProvider
	callback    metric.Callback
	instruments []*instrument
}

// RegisterCallback registers f to run at each Collect, observing
// instruments (those not made by this package are ignored).
func (m *meter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	if f == nil {
		return noop.Registration{}, errors.New("oteltest: RegisterCallback with a nil callback")
	}
	return m.register(f, instruments...), nil
}

func (m *meter) register(f metric.Callback, instruments ...metric.Observable) *registration {
	r := &registration{mp: m.mp, callback: f}
	for _, o := range instruments {
		if in := instrumentOf(o); in != nil {
			r.instruments = append(r.instruments, in)
		}
	}
	m.mp.mu.Lock()
	m.mp.regs = append(m.mp.regs, r)
	m.mp.mu.Unlock()
	return r
}

// Unregister stops the callback from running at the next Collect. It may
// be called more than once.
func (r *registration) Unregister() error {
	r.mp.mu.Lock()
	defer r.mp.mu.Unlock()
	r.mp.regs = slices.DeleteFunc(r.mp.regs, func(x *registration) bool { return x == r })
	return nil
}

// observer aggregates one callback's observations during one Collect.
type observer struct {
	noop.Observer
	reg    *registration
	points map[*instrument]map[attribute.Distinct]*Point // this Collect's
}

func (o *observer) ObserveInt64(obs metric.Int64Observable, v int64, opts ...metric.ObserveOption) {
	o.observe(obs, float64(v), opts)
}

func (o *observer) ObserveFloat64(obs metric.Float64Observable, v float64, opts ...metric.ObserveOption) {
	o.observe(obs, v, opts)
}

func (o *observer) observe(obs metric.Observable, v float64, opts []metric.ObserveOption) {
	in := instrumentOf(obs)
	if in == nil || !slices.Contains(o.reg.instruments, in) {
		return // not registered with this callback: the SDK drops it too
	}
	if o.points[in] == nil {
		o.points[in] = map[attribute.Distinct]*Point{}
	}
	in.aggregate(o.points[in], v, metric.NewObserveConfig(opts).Attributes())
}

// Collect runs the registered callbacks, then returns every instrument that
// has points: the synchronous ones' aggregates since they were made, the
// observable ones' observations in this collection. Its error joins the
// callbacks' errors and any name used by two instruments.
func (mp *MeterProvider) Collect(ctx context.Context) (Metrics, error) {
	mp.mu.Lock()
	regs := slices.Clone(mp.regs)
	mp.mu.Unlock()

	var errs []error
	observed := map[*instrument]map[attribute.Distinct]*Point{}
	for _, r := range regs { // without the lock: callbacks lock their own state
		if err := r.callback(ctx, &observer{reg: r, points: observed}); err != nil {
			errs = append(errs, err)
		}
	}

	mp.mu.Lock()
	defer mp.mu.Unlock()
	out := Metrics{}
	for _, in := range mp.instruments {
		points := in.points
		if in.kind.observable() {
			points = observed[in]
		}
		if len(points) == 0 {
			continue
		}
		if prev, ok := out[in.name]; ok {
			errs = append(errs, fmt.Errorf("oteltest: metric %q is both a %s %s of scope %q and a %s %s of scope %q",
				in.name, prev.Number, prev.Kind, prev.Scope.Name, in.number, in.kind, in.scope.Name))
			continue
		}
		out[in.name] = in.metricLocked(points)
	}
	return out, errors.Join(errs...)
}

// metricLocked copies points out as in's Metric.
func (in *instrument) metricLocked(points map[attribute.Distinct]*Point) Metric {
	m := Metric{Scope: in.scope, Name: in.name, Unit: in.unit, Description: in.description, Kind: in.kind, Number: in.number}
	for _, p := range points {
		c := *p
		c.Bounds, c.BucketCounts = slices.Clone(p.Bounds), slices.Clone(p.BucketCounts)
		m.Points = append(m.Points, c)
	}
	enc := attribute.DefaultEncoder()
	slices.SortFunc(m.Points, func(a, b Point) int {
		return strings.Compare(a.Attributes.Encoded(enc), b.Attributes.Encoded(enc))
	})
	return m
}
