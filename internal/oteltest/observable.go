package oteltest

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// The observable instruments. Each wraps its *instrument; Collect's
// observer accepts only these (observations of other instruments are
// ignored, as the SDK ignores instruments it did not make).
type (
	int64ObservableCounter struct {
		noop.Int64ObservableCounter
		in *instrument
	}
	int64ObservableUpDownCounter struct {
		noop.Int64ObservableUpDownCounter
		in *instrument
	}
	int64ObservableGauge struct {
		noop.Int64ObservableGauge
		in *instrument
	}
	float64ObservableCounter struct {
		noop.Float64ObservableCounter
		in *instrument
	}
	float64ObservableUpDownCounter struct {
		noop.Float64ObservableUpDownCounter
		in *instrument
	}
	float64ObservableGauge struct {
		noop.Float64ObservableGauge
		in *instrument
	}
)

// instrumentOf returns the instrument behind o, or nil if o is not one of
// this package's observables.
func instrumentOf(o metric.Observable) *instrument {
	switch o := o.(type) {
	case int64ObservableCounter:
		return o.in
	case int64ObservableUpDownCounter:
		return o.in
	case int64ObservableGauge:
		return o.in
	case float64ObservableCounter:
		return o.in
	case float64ObservableUpDownCounter:
		return o.in
	case float64ObservableGauge:
		return o.in
	}
	return nil
}

func (m *meter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	cfg := metric.NewInt64ObservableCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableCounter, number: Int64})
	o := int64ObservableCounter{in: in}
	m.registerInt64(o, cfg.Callbacks())
	return o, err
}

func (m *meter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	cfg := metric.NewInt64ObservableUpDownCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableUpDownCounter, number: Int64})
	o := int64ObservableUpDownCounter{in: in}
	m.registerInt64(o, cfg.Callbacks())
	return o, err
}

func (m *meter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	cfg := metric.NewInt64ObservableGaugeConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableGauge, number: Int64})
	o := int64ObservableGauge{in: in}
	m.registerInt64(o, cfg.Callbacks())
	return o, err
}

func (m *meter) Float64ObservableCounter(name string, opts ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	cfg := metric.NewFloat64ObservableCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableCounter, number: Float64})
	o := float64ObservableCounter{in: in}
	m.registerFloat64(o, cfg.Callbacks())
	return o, err
}

func (m *meter) Float64ObservableUpDownCounter(name string, opts ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	cfg := metric.NewFloat64ObservableUpDownCounterConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableUpDownCounter, number: Float64})
	o := float64ObservableUpDownCounter{in: in}
	m.registerFloat64(o, cfg.Callbacks())
	return o, err
}

func (m *meter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	cfg := metric.NewFloat64ObservableGaugeConfig(opts...)
	in, err := m.add(desc{name: name, unit: cfg.Unit(), description: cfg.Description(), kind: ObservableGauge, number: Float64})
	o := float64ObservableGauge{in: in}
	m.registerFloat64(o, cfg.Callbacks())
	return o, err
}

// registerInt64 registers the callbacks given to an instrument as options:
// each observes that instrument, for the provider's lifetime.
func (m *meter) registerInt64(o metric.Int64Observable, cbs []metric.Int64Callback) {
	for _, cb := range cbs {
		m.register(func(ctx context.Context, obs metric.Observer) error {
			return cb(ctx, int64Observer{obs: obs, inst: o})
		}, o)
	}
}

func (m *meter) registerFloat64(o metric.Float64Observable, cbs []metric.Float64Callback) {
	for _, cb := range cbs {
		m.register(func(ctx context.Context, obs metric.Observer) error {
			return cb(ctx, float64Observer{obs: obs, inst: o})
		}, o)
	}
}

// int64Observer is the observer an instrument's own callback gets.
type int64Observer struct {
	noop.Int64Observer
	obs  metric.Observer
	inst metric.Int64Observable
}

func (o int64Observer) Observe(v int64, opts ...metric.ObserveOption) {
	o.obs.ObserveInt64(o.inst, v, opts...)
}

type float64Observer struct {
	noop.Float64Observer
	obs  metric.Observer
	inst metric.Float64Observable
}

func (o float64Observer) Observe(v float64, opts ...metric.ObserveOption) {
	o.obs.ObserveFloat64(o.inst, v, opts...)
}
