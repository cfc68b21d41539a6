// Package oteltest records what code instrumented with the OpenTelemetry API
// emits, in memory, so that tests can assert on it without the SDK.
//
// It implements the API (go.opentelemetry.io/otel/trace and
// go.opentelemetry.io/otel/metric) and nothing else: fairseat's root module
// must not require the SDK or its exporters only for its own tests. It is
// small and plain on purpose, and right for what fairseat uses; where it is
// not complete it does something harmless, and says so below.
//
//	rec := oteltest.New()
//	s, _ := admission.New(cfg,
//		admission.WithTracerProvider(rec.TracerProvider),
//		admission.WithMeterProvider(rec.MeterProvider))
//	...
//	for _, sp := range rec.Ended() { ... }    // spans, in the order they ended
//	m, err := rec.Collect(ctx)                // metrics, as a reader sees them
//	v, ok := m.Value("fairseat.requests", attribute.String("fairseat.result", "admitted"))
//
// # Tracing
//
// A [TracerProvider] records every span its tracers start (tracer.go,
// span.go). Every span is recording and sampled, whatever its parent says
// (an always-on sampler); its span context has a valid trace ID (its
// parent's, or a new one for a root or with trace.WithNewRoot) and a span
// ID unique among the provider's spans. IDs are counters, so a test's IDs
// are the same from run to run. A span records its name, kind (Internal
// when unspecified or invalid), instrumentation scope, parent span context,
// start and end times (trace.WithTimestamp at start, End and on events;
// time.Now otherwise, which is the fake clock in a testing/synctest
// bubble), attributes (a key set again keeps its place and takes the new
// value; invalid attributes are dropped), events with their times and
// attributes, links, and its status (an Ok status is final; Error keeps
// its description, Unset and Ok none). RecordError adds an "exception"
// event with exception.type (the error's Go type, as %T prints it) and
// exception.message. After End a span stops recording and ignores changes.
// [TracerProvider.Spans] returns every span started so far, in start
// order, [TracerProvider.Ended] the ended ones in end order, both as
// [SpanData] copies.
//
// Each span keeps every event unless the provider was made with
// [WithEventLimit], which keeps the latest n, as the SDK's span limits do.
//
// Not implemented: other span limits, stack traces (trace.WithStackTrace is
// ignored), samplers, span processors and exporters, and the tracer's
// instrumentation attributes (the scope keeps name, version and schema
// URL).
//
// # Metrics
//
// A [MeterProvider] implements every instrument of the metric API
// (meter.go, instruments.go, observable.go): synchronous counters, up-down counters,
// histograms and gauges, and observable counters, up-down counters and
// gauges, in int64 and float64. Synchronous measurements are aggregated as
// they are made, per instrument and attribute set, with cumulative
// temporality: a sum since the provider was made, a gauge's last value, a
// histogram's count, sum, minimum, maximum and bucket counts. Histogram
// buckets are those of metric.WithExplicitBucketBoundaries, or the SDK's
// default (0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000,
// 7500, 10000); bucket i counts the values v with bounds[i-1] < v ≤
// bounds[i], the last one those above every bound.
//
// [MeterProvider.Collect] (collect.go) does what a reader's Collect does
// with an SDK provider: it runs the callbacks registered with
// Meter.RegisterCallback and those given to observable instruments as
// options, then returns the [Metrics]: per instrument name, its scope,
// unit, description, kind and, per attribute set, a [Point]. Observations
// count only during one Collect and only for the instruments their
// callback was registered for (the SDK ignores the others too); an
// observable counter or up-down counter observed twice with the same
// attributes in one collection reports the sum, a gauge the last value.
// An instrument with no point in a collection is not in its Metrics, as
// with the SDK: an unregistered callback's instruments disappear.
// Callback errors are joined into Collect's error, with the points
// collected anyway. Int64 values are reported as float64 (exact up to
// 2^53).
//
// Creating an instrument validates its name as the SDK does (a letter,
// then up to 254 letters, digits, '_', '.', '-' or '/') and returns an
// error naming it, together with a working instrument. Creating the same
// instrument (scope, name, kind and number type) twice returns the first;
// two instruments of one name in different scopes or of different kinds
// make Collect return an error, and Metrics keeps the first.
//
// Not implemented: views, exemplars, delta temporality, cardinality
// limits, the meter's instrumentation attributes, and resources. Methods
// that a later version of the API adds to its interfaces fall back to the
// no-op implementations of go.opentelemetry.io/otel/trace/noop and
// go.opentelemetry.io/otel/metric/noop, which every type here embeds.
//
// # Concurrency
//
// Every type here is safe for concurrent use: a provider's state (spans,
// or instruments and their points) is guarded by one mutex per provider,
// and nothing calls out while holding it (Collect runs the callbacks with
// it released). An Observer is valid only during the callback it was
// given to.
package oteltest
