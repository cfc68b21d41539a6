package admission_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fairseat/fairseat/admission"
)

// Wiring the scheduler to OpenTelemetry SDK providers that export to
// stdout. A request that has to wait gets a fairseat.admission.wait span
// under the caller's span; the metrics are read here once, by hand. (The
// output holds trace IDs, timestamps and measured waits, so it is not
// checked.)
func Example_openTelemetry() {
	spanExp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout), stdouttrace.WithPrettyPrint())
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanExp))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	s, err := admission.New(admission.Config{Capacity: 1},
		admission.WithTracerProvider(tp), admission.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", admission.JobTypeConfig{Priority: admission.PriorityForeground})

	ctx, span := tp.Tracer("example").Start(context.Background(), "GET /clone")
	first, _ := s.Acquire(ctx, admission.Request{Type: "clone", JobID: "a", FairnessKey: "203.0.113.7"})
	go func() {
		time.Sleep(10 * time.Millisecond)
		first.Release()
	}()
	// This one waits for the first to finish: its wait is a child span.
	second, err := s.Acquire(ctx, admission.Request{Type: "clone", JobID: "b", FairnessKey: "198.51.100.2"})
	if err == nil {
		second.Release()
	}
	span.End()

	metricExp, err := stdoutmetric.New(stdoutmetric.WithWriter(os.Stdout), stdoutmetric.WithPrettyPrint())
	if err != nil {
		panic(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err == nil {
		_ = metricExp.Export(context.Background(), &rm)
	}
	_ = s.Close(context.Background())
}

// Events report scheduling decisions. Here a configured tenant's fair-share
// allocation as it becomes active and drains.
func ExampleWithEventHandler() {
	s, err := admission.New(admission.Config{
		Capacity: 4,
		Keys:     map[string]admission.KeyPolicy{"tenant-a": {Weight: 3}},
	}, admission.WithEventHandler(func(e admission.Event) {
		fmt.Printf("%v %s: %g -> %g seats (%s)\n", e.Kind, e.Key, e.Previous, e.New, e.Reason)
	}))
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", admission.JobTypeConfig{Priority: admission.PriorityForeground})
	a, _ := s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "r1", FairnessKey: "tenant-a"})
	b, _ := s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "r2", FairnessKey: "203.0.113.7"})
	b.Release()
	a.Release()
	_ = s.Close(context.Background()) // delivers the queued events, then stops
	// Output:
	// allocation_changed tenant-a: 0 -> 4 seats (key_activated)
	// allocation_changed tenant-a: 4 -> 3 seats (rebalance)
	// allocation_changed other: 0 -> 1 seats (key_activated)
	// allocation_changed tenant-a: 3 -> 4 seats (rebalance)
	// allocation_changed other: 1 -> 0 seats (key_drained)
	// allocation_changed tenant-a: 4 -> 0 seats (key_drained)
}
