package admission

import (
	"context"
	"testing"

	"github.com/fairseat/fairseat/internal/oteltest"
)

// BenchmarkUncontendedTelemetry is BenchmarkUncontended's fairseat case with
// a recording MeterProvider attached (internal/oteltest's, which aggregates
// every measurement as it is made; it is never collected during the loop, so
// this is the recording cost alone), and additionally with a recording
// parent span in the context (the fast path then adds a span event to it;
// the span keeps its latest 128 events, as the SDK's default limit does, so
// memory stays bounded). It measures fairseat's instrumentation against a
// simple recording provider, not the OpenTelemetry SDK's cost, which the
// root module no longer depends on.
func BenchmarkUncontendedTelemetry(b *testing.B) {
	run := func(b *testing.B, ctx context.Context, opts ...Option) {
		s, err := New(Config{Capacity: 4}, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.RegisterType(benchType, benchTypeConfig); err != nil {
			b.Fatal(err)
		}
		uncontendedLoop(ctx, b, s)
		b.StopTimer()
		if err := s.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("provider=recorder", func(b *testing.B) {
		run(b, context.Background(), WithMeterProvider(oteltest.NewMeterProvider()))
	})
	b.Run("provider=recorder+span", func(b *testing.B) {
		tp := oteltest.NewTracerProvider(oteltest.WithEventLimit(128))
		ctx, parent := tp.Tracer("bench").Start(context.Background(), "parent")
		defer parent.End()
		run(b, ctx, WithMeterProvider(oteltest.NewMeterProvider()), WithTracerProvider(tp))
	})
}
