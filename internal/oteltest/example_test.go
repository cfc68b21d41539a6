package oteltest_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairseat/fairseat/internal/oteltest"
)

// A test gives the recorder's providers to the code it tests, then reads
// the spans and the metrics it recorded.
func Example() {
	rec := oteltest.New()
	ctx := context.Background()

	// The code under test: a span with a child, a histogram, and an
	// observable up-down counter read at collection time.
	ctx, parent := rec.TracerProvider.Tracer("app").Start(ctx, "GET /clone")
	_, wait := rec.TracerProvider.Tracer("lib").Start(ctx, "wait", trace.WithAttributes(attribute.Int("queue.length", 3)))
	wait.End()
	parent.AddEvent("admitted")
	parent.End()
	m := rec.MeterProvider.Meter("lib")
	waits, _ := m.Float64Histogram("wait.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	waits.Record(ctx, 0.25, metric.WithAttributes(attribute.String("result", "admitted")))
	queued, _ := m.Int64ObservableUpDownCounter("queue.size")
	reg, _ := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(queued, 3)
		return nil
	}, queued)
	defer reg.Unregister()

	// The test.
	for _, s := range rec.Ended() {
		fmt.Printf("%s (%s): span %s, parent %s, %d events\n",
			s.Name, s.Scope.Name, s.SpanContext.SpanID(), s.Parent.SpanID(), len(s.Events))
	}
	if n, ok := rec.Ended()[0].Attr("queue.length"); ok {
		fmt.Println("queue.length", n.AsInt64())
	}
	metrics, err := rec.Collect(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Print(metrics)
	p, _ := metrics.Point("wait.duration", attribute.String("result", "admitted"))
	fmt.Println("admitted waits:", p.Count, p.Sum)
	// Output:
	// wait (lib): span 0000000000000003, parent 0000000000000002, 0 events
	// GET /clone (app): span 0000000000000002, parent 0000000000000000, 1 events
	// queue.length 3
	// queue.size (int64 ObservableUpDownCounter, scope lib, unit "")
	// 	{} 3
	// wait.duration (float64 Histogram, scope lib, unit "s")
	// 	{result=admitted} count=1 sum=0.25 min=0.25 max=0.25 buckets=[0 1 0]
	// admitted waits: 1 0.25
}
