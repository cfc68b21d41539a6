package throttle

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Metric and span event names of the client side (the fairseat.client.*
// instruments of both adapters).
const (
	MetricRequests  = "fairseat.client.requests"  // by fairseat.client.decision: accepted, rejected, throttled, pushed_back
	MetricPushbacks = "fairseat.client.pushbacks" // retry delays received from backends and honoured
	EventRefused    = "fairseat.client.refused"   // a request refused locally
	EventPushback   = "fairseat.client.pushback"  // a backend asked for a delay
)

// Decisions, the values of AttrDecision: a request sent is counted when its
// outcome is known, as accepted or rejected (the backend said it is
// overloaded), as the Throttle counts it; a request refused locally at
// once.
const (
	DecisionAccepted   = "accepted"
	DecisionRejected   = "rejected"
	DecisionThrottled  = "throttled"
	DecisionPushedBack = "pushed_back"
)

// Attribute keys of the client side.
const (
	AttrDecision   = attribute.Key("fairseat.client.decision")    // see the Decision constants
	AttrBackend    = attribute.Key("server.address")              // the backend (span events only)
	AttrCall       = attribute.Key("fairseat.client.call")        // the kind of call (span events only)
	AttrP          = attribute.Key("fairseat.client.probability") // the refusal probability of the window
	AttrRequests   = attribute.Key("fairseat.client.window.requests")
	AttrAccepts    = attribute.Key("fairseat.client.window.accepts")
	AttrRetryAfter = attribute.Key("fairseat.client.retry_after") // seconds
)

// Telemetry records an adapter's decisions as metrics and span events.
// Create it with NewTelemetry (the zero value is not usable); it is safe
// for concurrent use. Metrics carry
// no backend or call (unbounded cardinality); span events do. A request
// costs one counter update, at its refusal or at its outcome.
type Telemetry struct {
	requests, pushbacks metric.Int64Counter
	// by decision: accepted, rejected, throttled, pushed_back
	accepted, rejected, throttled, pushedBack []metric.AddOption
}

// NewTelemetry creates the instruments with mp's meter for scope (the
// global provider if mp is nil). An instrument that cannot be created is
// reported to otel.Handle and replaced by a no-op one.
func NewTelemetry(mp metric.MeterProvider, scope string) *Telemetry {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			otel.Handle(err)
		}
		if err != nil || c == nil {
			return noop.Int64Counter{}
		}
		return c
	}
	opts := func(decision string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(AttrDecision.String(decision)))}
	}
	return &Telemetry{
		requests:   counter(MetricRequests, "{request}", "Requests made through the client interceptor or transport, by decision: sent and accepted, sent and rejected (the backend is overloaded), or refused locally (throttled, pushed_back). A request sent counts when it ends."),
		pushbacks:  counter(MetricPushbacks, "{pushback}", "Retry delays received from backends and honoured."),
		accepted:   opts(DecisionAccepted),
		rejected:   opts(DecisionRejected),
		throttled:  opts(DecisionThrottled),
		pushedBack: opts(DecisionPushedBack),
	}
}

// Decided records d, the decision about a request of kind call to backend,
// if it is a refusal: a count, and an event on ctx's span if it is
// recording. (A request allowed is counted by Recorded.)
func (tm *Telemetry) Decided(ctx context.Context, backend, call string, d Decision) {
	switch d.Reason {
	case Allowed:
		return
	case Throttled:
		tm.requests.Add(ctx, 1, tm.throttled...)
	default:
		tm.requests.Add(ctx, 1, tm.pushedBack...)
	}
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.AddEvent(EventRefused, trace.WithAttributes(
			AttrDecision.String(d.Reason.String()), AttrBackend.String(backend), AttrCall.String(call),
			AttrP.Float64(d.P), AttrRequests.Int64(d.Requests), AttrAccepts.Int64(d.Accepts),
			AttrRetryAfter.Float64(d.RetryAfter.Seconds())))
	}
}

// Recorded records o, the outcome of a request of kind call to backend; a
// pushback is also an event on ctx's span, if it is recording.
func (tm *Telemetry) Recorded(ctx context.Context, backend, call string, o Outcome) {
	if o.Accepted {
		tm.requests.Add(ctx, 1, tm.accepted...)
	} else {
		tm.requests.Add(ctx, 1, tm.rejected...)
	}
	if o.Pushback <= 0 {
		return
	}
	tm.pushbacks.Add(ctx, 1)
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.AddEvent(EventPushback, trace.WithAttributes(
			AttrBackend.String(backend), AttrCall.String(call), AttrRetryAfter.Float64(o.Pushback.Seconds())))
	}
}
