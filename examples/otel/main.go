// Command otel wires fairseat's admission scheduler to the OpenTelemetry SDK
// and prints what three requests leave behind, through the SDK's stdout
// exporters: one admitted at once, one that waits for the first to finish,
// and one rejected because its client already has a request queued.
//
//	go run ./examples/otel
//
// A request decided at arrival adds an event (fairseat.admitted,
// fairseat.rejected) to the caller's span; a request that waits gets a
// child span, fairseat.admission.wait. The metrics are read once, by hand,
// with a ManualReader; a server would use a periodic reader or the
// Prometheus exporter (see examples/httpserver). The scheduler itself
// depends only on the OpenTelemetry API: the SDK is the application's
// choice, which is why this program lives in the examples module.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairseat/fairseat/admission"
)

// holdFor is how long the first request keeps its seat.
const holdFor = 10 * time.Millisecond

func main() {
	if err := run(context.Background(), os.Stdout, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run admits the three requests, writing a line per request to summary, and
// the spans (as they end) and then the metrics, as JSON, to export.
func run(ctx context.Context, summary, export io.Writer) (err error) {
	spanExp, err := stdouttrace.New(stdouttrace.WithWriter(export), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanExp))
	defer func() { err = errors.Join(err, tp.Shutdown(context.Background())) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { err = errors.Join(err, mp.Shutdown(context.Background())) }()

	// One seat, and at most one queued request per client.
	s, err := admission.New(admission.Config{Capacity: 1, DefaultKey: admission.KeyPolicy{MaxQueued: 1}},
		admission.WithTracerProvider(tp), admission.WithMeterProvider(mp))
	if err != nil {
		return err
	}
	if err := s.RegisterType("clone", admission.JobTypeConfig{Priority: admission.PriorityForeground}); err != nil {
		return err
	}
	if err := admit(ctx, s, tp.Tracer("example"), summary); err != nil {
		return errors.Join(err, s.Close(ctx))
	}
	// Collect before Close: Close unregisters the scheduler's metric
	// callback, and only the two histograms would be left.
	var rm metricdata.ResourceMetrics
	err = reader.Collect(ctx, &rm)
	if err := errors.Join(err, s.Close(ctx)); err != nil {
		return err
	}
	metricExp, err := stdoutmetric.New(stdoutmetric.WithWriter(export), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return err
	}
	return metricExp.Export(ctx, &rm)
}

// admit runs the three requests under one caller span, "GET /clone".
func admit(ctx context.Context, s *admission.Scheduler, tracer trace.Tracer, summary io.Writer) error {
	ctx, span := tracer.Start(ctx, "GET /clone")
	defer span.End()

	first, err := s.Acquire(ctx, admission.Request{Type: "clone", JobID: "repo-a", FairnessKey: "203.0.113.7"})
	if err != nil {
		return err
	}
	fmt.Fprintln(summary, "repo-a for 203.0.113.7: admitted at once")

	type result struct {
		p   *admission.Permit
		err error
	}
	second := make(chan result)
	go func() {
		p, err := s.Acquire(ctx, admission.Request{Type: "clone", JobID: "repo-b", FairnessKey: "198.51.100.2"})
		second <- result{p, err}
	}()
	for s.Snapshot().Queued == 0 { // until the second request is in the queue
		time.Sleep(time.Millisecond)
	}

	// 198.51.100.2 already has a request queued: the third is refused.
	_, err = s.Acquire(ctx, admission.Request{Type: "clone", JobID: "repo-c", FairnessKey: "198.51.100.2"})
	if !errors.Is(err, admission.ErrQueueFull) {
		return fmt.Errorf("repo-c: got %v, want %v", err, admission.ErrQueueFull)
	}
	fmt.Fprintf(summary, "repo-c for 198.51.100.2: %v\n", err)

	time.Sleep(holdFor)
	first.Release()
	r := <-second
	if r.err != nil {
		return r.err
	}
	r.p.Release()
	fmt.Fprintf(summary, "repo-b for 198.51.100.2: admitted when repo-a released its seat, after %v\n", holdFor)
	return nil
}
