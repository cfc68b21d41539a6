package admission

import (
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures a [Scheduler] beyond its [Config]. Nil options are
// ignored.
type Option interface{ apply(*options) }

type options struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	logger         *slog.Logger
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithTracerProvider sets the OpenTelemetry tracer provider; the default is
// the global one. The scheduler emits no spans yet (they arrive with the
// observability work); the option is accepted so callers can wire it now.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) { o.tracerProvider = tp })
}

// WithMeterProvider sets the OpenTelemetry meter provider; the default is the
// global one. The scheduler records no metrics yet (Snapshot has the
// counters); the option is accepted so callers can wire it now.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.meterProvider = mp })
}

// WithLogger sets where the scheduler reports background job failures,
// panics and work dropped at Close; the default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.tracerProvider == nil {
		o.tracerProvider = otel.GetTracerProvider()
	}
	if o.meterProvider == nil {
		o.meterProvider = otel.GetMeterProvider()
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}
