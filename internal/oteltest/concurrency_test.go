package oteltest

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// TestConcurrentUse: spans and measurements from many goroutines while
// another collects and reads spans (run with -race); nothing is lost and
// every span ID is unique.
func TestConcurrentUse(t *testing.T) {
	const workers, rounds = 8, 200
	rec := New()
	ctx := context.Background()
	m := rec.MeterProvider.Meter("lib")
	count, _ := m.Int64Counter("count")
	hist, _ := m.Float64Histogram("hist")
	gauge, _ := m.Int64ObservableGauge("gauge")
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(gauge, int64(len(rec.Spans())))
		return nil
	}, gauge)
	must(t, err)
	ctx, parent := rec.TracerProvider.Tracer("t").Start(ctx, "parent")

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { // a reader, as a test asserting while the code runs
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := rec.Collect(ctx); err != nil {
				t.Error(err)
			}
			rec.Ended()
		}
	})
	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Go(func() {
			for range rounds {
				_, sp := rec.TracerProvider.Tracer("t").Start(ctx, "work")
				sp.SetAttributes(attribute.Int("worker", w))
				sp.AddEvent("step")
				parent.AddEvent("child started") // one span from many goroutines
				count.Add(ctx, 1, metric.WithAttributes(attribute.Int("worker", w%2)))
				hist.Record(ctx, 0.5)
				sp.End()
			}
		})
	}
	workersWG.Wait()
	close(done)
	wg.Wait()
	parent.End()

	got, err := rec.Collect(ctx)
	must(t, err)
	for w := range 2 {
		wantPoint(t, got, "count", Counter, Int64, workers*rounds/2, attribute.Int("worker", w))
	}
	if p, _ := got.Point("hist"); p.Count != workers*rounds {
		t.Errorf("hist count %d, want %d", p.Count, workers*rounds)
	}
	wantPoint(t, got, "gauge", ObservableGauge, Int64, workers*rounds+1)
	spans := rec.Ended()
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	if len(spans) != workers*rounds+1 || len(ids) != len(spans) {
		t.Errorf("%d ended spans with %d distinct IDs, want %d", len(spans), len(ids), workers*rounds+1)
	}
	if n := len(spans[len(spans)-1].Events); n != workers*rounds {
		t.Errorf("parent has %d events, want %d", n, workers*rounds)
	}
}
