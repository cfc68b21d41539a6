package admission

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkUncontendedTelemetry is BenchmarkUncontended's fairseat case with
// an SDK MeterProvider and a ManualReader attached (the reader is never
// collected during the loop, so this is the recording cost alone), and
// additionally with a recording parent span in the context (the fast path
// then adds a span event to it).
func BenchmarkUncontendedTelemetry(b *testing.B) {
	run := func(b *testing.B, ctx context.Context, opts ...Option) {
		s, err := New(Config{Capacity: 4}, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.RegisterType(benchType, benchTypeConfig); err != nil {
			b.Fatal(err)
		}
		r := Request{Type: benchType, JobID: "repo-0", FairnessKey: "client-0"}
		b.ReportAllocs()
		m0 := mallocs()
		for b.Loop() {
			p, err := s.Acquire(ctx, r)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
		reportMallocs(b, m0, b.N)
		b.StopTimer()
		if err := s.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("provider=manualreader", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer mp.Shutdown(context.Background())
		run(b, context.Background(), WithMeterProvider(mp))
	})
	b.Run("provider=manualreader+span", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer mp.Shutdown(context.Background())
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
		ctx, parent := tp.Tracer("bench").Start(context.Background(), "parent")
		defer parent.End()
		run(b, ctx, WithMeterProvider(mp), WithTracerProvider(tp))
	})
}
