package oteltest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// MeterProvider is a metric.MeterProvider that aggregates measurements in
// memory and collects them on demand (Collect). Its zero value is an empty
// provider ready to use; it is safe for concurrent use. The embedded no-op
// provider answers methods a later API version adds.
type MeterProvider struct {
	noop.MeterProvider

	mu sync.Mutex // guards the fields below and every instrument's points
	// meters holds one meter per scope asked for.
	meters map[Scope]*meter
	// instruments are every instrument created, in creation order, each
	// (scope, name, kind, number) once.
	instruments []*instrument
	// regs are the callbacks registered and not unregistered, in
	// registration order.
	regs []*registration
}

// NewMeterProvider returns an empty MeterProvider.
func NewMeterProvider() *MeterProvider { return &MeterProvider{} }

// Meter returns the provider's meter of the given scope.
func (mp *MeterProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	cfg := metric.NewMeterConfig(opts...)
	scope := Scope{Name: name, Version: cfg.InstrumentationVersion(), SchemaURL: cfg.SchemaURL()}
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if m, ok := mp.meters[scope]; ok {
		return m
	}
	if mp.meters == nil {
		mp.meters = map[Scope]*meter{}
	}
	m := &meter{mp: mp, scope: scope}
	mp.meters[scope] = m
	return m
}

// meter creates instruments of one scope. It never changes after Meter.
type meter struct {
	noop.Meter
	mp    *MeterProvider
	scope Scope
}

// desc is what every instrument config says about its instrument.
type desc struct {
	name, unit, description string
	kind                    Kind
	number                  Number
	bounds                  []float64 // histograms only
}

// add returns the instrument described by d, new unless the same scope,
// name, kind and number type was created before, and the error of an
// invalid name.
func (m *meter) add(d desc) (*instrument, error) {
	err := validateName(d.name)
	m.mp.mu.Lock()
	defer m.mp.mu.Unlock()
	i := slices.IndexFunc(m.mp.instruments, func(in *instrument) bool {
		return in.scope == m.scope && in.name == d.name && in.kind == d.kind && in.number == d.number
	})
	if i >= 0 {
		return m.mp.instruments[i], err
	}
	if d.kind == Histogram {
		if bad := validateBounds(d.bounds); d.bounds == nil || bad != nil {
			d.bounds, err = defaultBounds, errors.Join(err, bad)
		}
	}
	in := &instrument{mp: m.mp, scope: m.scope, desc: d}
	m.mp.instruments = append(m.mp.instruments, in)
	return in, err
}

// defaultBounds are the SDK's default explicit bucket boundaries.
var defaultBounds = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}

// validateBounds applies the SDK's rule for bucket boundaries: finite and
// increasing.
func validateBounds(bounds []float64) error {
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && b <= bounds[i-1] {
			return fmt.Errorf("oteltest: invalid bucket boundaries %v: not finite and increasing; using the default", bounds)
		}
	}
	return nil
}

// validateName applies the SDK's rule for instrument names.
func validateName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("oteltest: invalid instrument name %q: empty or longer than 255 bytes", name)
	}
	for i, c := range name {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if letter || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/') {
			continue
		}
		return fmt.Errorf("oteltest: invalid instrument name %q: %q at byte %d", name, c, i)
	}
	return nil
}

func (m *meter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	cfg := metric.NewInt64CounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Counter, number: Int64})
	return int64Counter{in: in}, err
}

func (m *meter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	cfg := metric.NewInt64UpDownCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: UpDownCounter, number: Int64})
	return int64UpDownCounter{in: in}, err
}

func (m *meter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	cfg := metric.NewInt64HistogramConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Histogram, number: Int64,
		bounds: slices.Clone(cfg.ExplicitBucketBoundaries())})
	return int64Histogram{in: in}, err
}

func (m *meter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	cfg := metric.NewInt64GaugeConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Gauge, number: Int64})
	return int64Gauge{in: in}, err
}

func (m *meter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	cfg := metric.NewFloat64CounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Counter, number: Float64})
	return float64Counter{in: in}, err
}

func (m *meter) Float64UpDownCounter(name string, opts ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	cfg := metric.NewFloat64UpDownCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: UpDownCounter, number: Float64})
	return float64UpDownCounter{in: in}, err
}

func (m *meter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	cfg := metric.NewFloat64HistogramConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Histogram, number: Float64,
		bounds: slices.Clone(cfg.ExplicitBucketBoundaries())})
	return float64Histogram{in: in}, err
}

func (m *meter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	cfg := metric.NewFloat64GaugeConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: Gauge, number: Float64})
	return float64Gauge{in: in}, err
}
