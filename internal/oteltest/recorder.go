package oteltest

import "context"

// Recorder is a TracerProvider and a MeterProvider for one test. Pass the
// providers to the code under test and read what it recorded with Spans,
// Ended and Collect. The zero value is not usable: use New. It is safe for
// concurrent use.
type Recorder struct {
	TracerProvider *TracerProvider
	MeterProvider  *MeterProvider
}

// New returns a Recorder with new, empty providers.
func New() *Recorder {
	return &Recorder{TracerProvider: NewTracerProvider(), MeterProvider: NewMeterProvider()}
}

// Spans returns every span started so far, in start order
// (TracerProvider.Spans).
func (r *Recorder) Spans() []SpanData { return r.TracerProvider.Spans() }

// Ended returns the spans ended so far, in end order (TracerProvider.Ended).
func (r *Recorder) Ended() []SpanData { return r.TracerProvider.Ended() }

// Collect runs the metric callbacks and returns the metrics
// (MeterProvider.Collect).
func (r *Recorder) Collect(ctx context.Context) (Metrics, error) {
	return r.MeterProvider.Collect(ctx)
}

// Scope is an instrumentation scope: the name, version and schema URL a
// tracer or meter was asked for. Its zero value is the unnamed scope; it is
// a plain, comparable value.
type Scope struct {
	Name, Version, SchemaURL string
}
