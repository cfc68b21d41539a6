package oteltest

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Kind is an instrument's kind. The zero value is not a kind.
type Kind uint8

// The instrument kinds of the metric API.
const (
	Counter Kind = iota + 1
	UpDownCounter
	Histogram
	Gauge
	ObservableCounter
	ObservableUpDownCounter
	ObservableGauge
)

var kindNames = [...]string{"unknown", "Counter", "UpDownCounter", "Histogram", "Gauge",
	"ObservableCounter", "ObservableUpDownCounter", "ObservableGauge"}

// String returns the kind's name in the API, as in Meter.Int64<Kind>.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return kindNames[0]
}

// observable reports whether k is read by callbacks at collection time.
func (k Kind) observable() bool { return k >= ObservableCounter }

// Number is an instrument's number type. The zero value is not a type.
type Number uint8

// The number types of the metric API.
const (
	Int64 Number = iota + 1
	Float64
)

// String returns "int64" or "float64".
func (n Number) String() string {
	switch n {
	case Int64:
		return "int64"
	case Float64:
		return "float64"
	}
	return "unknown"
}

// instrument is one created instrument. Everything but points never
// changes after meter.add.
type instrument struct {
	mp    *MeterProvider
	scope Scope
	desc
	// points are a synchronous instrument's aggregates since it was made,
	// one per attribute set measured; guarded by mp.mu. Observable
	// instruments keep none: Collect aggregates their observations afresh.
	points map[attribute.Distinct]*Point
}

// measure aggregates one synchronous measurement.
func (in *instrument) measure(v float64, attrs attribute.Set) {
	in.mp.mu.Lock()
	defer in.mp.mu.Unlock()
	if in.points == nil {
		in.points = map[attribute.Distinct]*Point{}
	}
	in.aggregate(in.points, v, attrs)
}

// aggregate adds v, measured with attrs, to its point in points: a sum
// for counters, the last value for gauges, a histogram's count, sum,
// extremes and bucket.
func (in *instrument) aggregate(points map[attribute.Distinct]*Point, v float64, attrs attribute.Set) {
	p := points[attrs.Equivalent()]
	if p == nil {
		p = &Point{Attributes: attrs}
		if in.kind == Histogram {
			p.Bounds, p.BucketCounts, p.Min, p.Max = in.bounds, make([]uint64, len(in.bounds)+1), v, v
		}
		points[attrs.Equivalent()] = p
	}
	switch in.kind {
	case Counter, UpDownCounter, ObservableCounter, ObservableUpDownCounter:
		p.Value += v
	case Gauge, ObservableGauge:
		p.Value = v
	case Histogram:
		p.Count++
		p.Sum += v
		p.Min, p.Max = min(p.Min, v), max(p.Max, v)
		i, _ := slices.BinarySearch(in.bounds, v) // the first bound ≥ v
		p.BucketCounts[i]++
	}
}

// The synchronous instruments: each wraps its *instrument.
type (
	int64Counter struct {
		noop.Int64Counter
		in *instrument
	}
	int64UpDownCounter struct {
		noop.Int64UpDownCounter
		in *instrument
	}
	int64Histogram struct {
		noop.Int64Histogram
		in *instrument
	}
	int64Gauge struct {
		noop.Int64Gauge
		in *instrument
	}
	float64Counter struct {
		noop.Float64Counter
		in *instrument
	}
	float64UpDownCounter struct {
		noop.Float64UpDownCounter
		in *instrument
	}
	float64Histogram struct {
		noop.Float64Histogram
		in *instrument
	}
	float64Gauge struct {
		noop.Float64Gauge
		in *instrument
	}
)

func addAttrs(opts []metric.AddOption) attribute.Set { return metric.NewAddConfig(opts).Attributes() }
func recordAttrs(opts []metric.RecordOption) attribute.Set {
	return metric.NewRecordConfig(opts).Attributes()
}

func (c int64Counter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.in.measure(float64(v), addAttrs(opts))
}
func (c int64Counter) Enabled(context.Context) bool { return true }

func (c int64UpDownCounter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.in.measure(float64(v), addAttrs(opts))
}
func (c int64UpDownCounter) Enabled(context.Context) bool { return true }

func (h int64Histogram) Record(_ context.Context, v int64, opts ...metric.RecordOption) {
	h.in.measure(float64(v), recordAttrs(opts))
}
func (h int64Histogram) Enabled(context.Context) bool { return true }

func (g int64Gauge) Record(_ context.Context, v int64, opts ...metric.RecordOption) {
	g.in.measure(float64(v), recordAttrs(opts))
}
func (g int64Gauge) Enabled(context.Context) bool { return true }

func (c float64Counter) Add(_ context.Context, v float64, opts ...metric.AddOption) {
	c.in.measure(v, addAttrs(opts))
}
func (c float64Counter) Enabled(context.Context) bool { return true }

func (c float64UpDownCounter) Add(_ context.Context, v float64, opts ...metric.AddOption) {
	c.in.measure(v, addAttrs(opts))
}
func (c float64UpDownCounter) Enabled(context.Context) bool { return true }

func (h float64Histogram) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	h.in.measure(v, recordAttrs(opts))
}
func (h float64Histogram) Enabled(context.Context) bool { return true }

func (g float64Gauge) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	g.in.measure(v, recordAttrs(opts))
}
func (g float64Gauge) Enabled(context.Context) bool { return true }
