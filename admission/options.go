package admission

import (
	"log/slog"
	"time"

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

	spanIdentifiers bool          // WithSpanIdentifiers (otel.go)
	eventHandler    func(Event)   // WithEventHandler (events.go)
	costStore       CostStore     // WithCostStore (coststore.go)
	costEvery       time.Duration // WithCostStore's interval
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithTracerProvider sets the OpenTelemetry tracer provider; the default is
// the global one. A request that waits for a seat gets a child span,
// "fairseat.admission.wait", of the recording span in its context; one admitted at
// once adds a "fairseat.admitted" event to that span instead (see
// "Observability" in the package doc). The instrumentation scope is
// [ScopeName].
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) { o.tracerProvider = tp })
}

// WithMeterProvider sets the OpenTelemetry meter provider; the default is the
// global one. Instruments (named fairseat.*, scope [ScopeName]) are created
// in New; the ones read at collection time stop reporting at Close. See
// "Observability" in the package doc for the list.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.meterProvider = mp })
}

// WithLogger sets where the scheduler reports background job failures,
// panics, work dropped at Close and cost store failures; the default is
// slog.Default().
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
