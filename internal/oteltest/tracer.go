package oteltest

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerProvider is a trace.TracerProvider that records every span its
// tracers start. Its zero value is an empty provider ready to use; it is
// safe for concurrent use. The embedded no-op provider answers methods a
// later API version adds.
type TracerProvider struct {
	noop.TracerProvider

	// eventLimit is the most events a span keeps (WithEventLimit); 0: all.
	// It never changes after NewTracerProvider.
	eventLimit int

	mu sync.Mutex // guards the fields below and every span's data
	// lastID is the last trace and span ID number handed out; IDs are
	// lastID+1, lastID+2, ..., so each is valid (non-zero) and unique.
	lastID uint64
	spans  []*span // every span started, in start order
	ended  []*span // the ended spans, in end order; a subset of spans
}

// NewTracerProvider returns an empty TracerProvider.
func NewTracerProvider(opts ...TracerProviderOption) *TracerProvider {
	tp := &TracerProvider{}
	for _, o := range opts {
		if o != nil {
			o.apply(tp)
		}
	}
	return tp
}

// TracerProviderOption configures NewTracerProvider; a nil one is ignored.
type TracerProviderOption interface {
	apply(*TracerProvider)
}

type eventLimit int

func (n eventLimit) apply(tp *TracerProvider) { tp.eventLimit = max(0, int(n)) }

// WithEventLimit makes each span keep only its n latest events and count
// the others in SpanData.DroppedEvents, as the SDK's span limits do (its
// default is 128). A benchmark that adds events to one long-lived span
// needs it to run in bounded memory. n ≤ 0, the default, keeps every event.
func WithEventLimit(n int) TracerProviderOption { return eventLimit(n) }

// Tracer returns a tracer whose spans are recorded with the given scope.
func (tp *TracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	cfg := trace.NewTracerConfig(opts...)
	return &tracer{tp: tp, scope: Scope{Name: name, Version: cfg.InstrumentationVersion(), SchemaURL: cfg.SchemaURL()}}
}

// Spans returns a copy of every span started so far, in start order.
func (tp *TracerProvider) Spans() []SpanData {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return snapshotLocked(tp.spans)
}

// Ended returns a copy of every span ended so far, in end order.
func (tp *TracerProvider) Ended() []SpanData {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return snapshotLocked(tp.ended)
}

func snapshotLocked(spans []*span) []SpanData {
	out := make([]SpanData, len(spans))
	for i, s := range spans {
		out[i] = s.data.clone()
	}
	return out
}

// tracer starts recording spans. It never changes after Tracer.
type tracer struct {
	noop.Tracer
	tp    *TracerProvider
	scope Scope
}

// Start starts a recording, sampled span: a child of the span context in
// ctx unless trace.WithNewRoot is given or ctx has none.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	var parent trace.SpanContext
	if !cfg.NewRoot() {
		parent = trace.SpanContextFromContext(ctx)
	}
	start := cfg.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{tp: t.tp}
	s.data = SpanData{
		Name:   name,
		Scope:  t.scope,
		Kind:   trace.ValidateSpanKind(cfg.SpanKind()),
		Parent: parent,
		Start:  start,
		Links:  slices.Clone(cfg.Links()),
	}
	s.setAttributesLocked(cfg.Attributes()) // s is not shared yet

	t.tp.mu.Lock()
	sc := trace.SpanContextConfig{TraceID: parent.TraceID(), TraceFlags: trace.FlagsSampled, TraceState: parent.TraceState()}
	if !parent.IsValid() {
		binary.BigEndian.PutUint64(sc.TraceID[8:], t.tp.newIDLocked())
	}
	binary.BigEndian.PutUint64(sc.SpanID[:], t.tp.newIDLocked())
	s.data.SpanContext = trace.NewSpanContext(sc)
	t.tp.spans = append(t.tp.spans, s)
	t.tp.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

func (tp *TracerProvider) newIDLocked() uint64 {
	tp.lastID++
	return tp.lastID
}
